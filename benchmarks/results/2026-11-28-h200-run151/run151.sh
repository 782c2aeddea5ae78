#!/bin/bash
# thirtieth session, run 151 (issue 50): where the heavy loops' time goes on a GPU. Run 148's
# programs put logistic regression at 0.275 s a run against 0.171 local with its worker busy
# 0.042 s of it; replay_profile.py profiles the client and the worker (cProfile) over whole
# programs: logistic regression, MLP training, the random walk; and the hot sync's loop.
#   run(command="bash .gpu/run151.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o151; mkdir -p $O
cd .gpu/clean && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for loop in logistic_regression mlp_training random_walk; do
  timeout 90 python3 benchmarks/replay_profile.py --devices 0 --loop $loop --reps 5 --top 30 > $O/prof-$loop.txt 2>&1
  echo "$loop rc $? $(date +%T)"; grep -E " on ipc under " $O/prof-$loop.txt | cut -c1-300
done
timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop hot_sync --reps 2000 --top 30 > $O/prof-hot_sync.txt 2>&1
echo "hot_sync rc $? $(date +%T)"; grep -E " on ipc under " $O/prof-hot_sync.txt | cut -c1-300
cd ../..
tar czf $OUT/o151.tgz -C /tmp o151
echo "end $(date +%T)"
