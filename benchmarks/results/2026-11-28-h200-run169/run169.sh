#!/bin/bash
# thirty-second session, run 169 (issue 50): the random walk and the Monte Carlo option (a
# RandomState's draws, eager between the graphs): replay_profile.py's figures and cProfiles,
# whole programs; is the affine float guess (last session, VM only) holding the lane on a GPU?
#   run(command="bash .gpu/run169.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o169; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for prog in random_walk mc_option monte_carlo_pi; do
  timeout 70 python3 benchmarks/replay_profile.py --devices 0 --loop $prog --reps 5 --top 30 > $O/prof-$prog.txt 2>&1
  echo "$prog rc $? $(date +%T)"; grep -E "an iteration|calls a message" $O/prof-$prog.txt | cut -c1-900
  sed -n '/=== worker/,$p' $O/prof-$prog.txt | sed -n 8,30p | cut -c1-150
done
cd ../..
tar czf $OUT/o169.tgz -C /tmp o169
echo "end $(date +%T)"
