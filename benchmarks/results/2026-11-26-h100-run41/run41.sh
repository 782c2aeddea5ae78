#!/bin/bash
# fifteenth session, run 41: issue 50, where the worker's time goes in the programs that miss by most
# (mc_option 326 us of worker an iteration against local's whole 155 us in run 36; random walk, MC pi,
# n-body, logistic regression): the worker's cProfile of each whole program (replay_profile.py), the
# pool's default policy (share) and the benchmarks' (fair).
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run41.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for p in mc_option random_walk monte_carlo_pi nbody logistic_regression; do
  timeout 100 python3 benchmarks/replay_profile.py --devices 0 --loop $p --reps 3 --top 45 --policy share > $OUT/prof-$p.txt 2>&1
  head -1 $OUT/prof-$p.txt
done
echo "programs $(date +%T)"
timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --programs mc_option,random_walk,monte_carlo_pi,nbody,logistic_regression,hot_sync --json $OUT/programs41.json > $OUT/programs41.log 2>&1
grep -vE "^\s*[\"{}\[\]]" $OUT/programs41.log | head -12
echo "end $(date +%T)"
