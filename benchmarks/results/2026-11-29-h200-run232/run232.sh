#!/bin/bash
# thirty-ninth session, run 232 (issue 50): the session's end against its start (066354b), six
# alternating calls (start end end start start end): programs.py's read loops, replay_sync.py's
# hot sync, time_step and sync_4ops.
#   run(command="bash .gpu/run232.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o232; mkdir -p $O
for tree in start end; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=hot_sync,chain20,random_walk,conjugate_gradient,monte_carlo_pi_rng
i=0
for tree in start end end start start end; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,time_step,sync_4ops --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(hot_sync|time_step|sync_4ops)|^raw" $O/r-$i-$tree.txt | cut -c1-120)
done
tar czf $OUT/o232.tgz -C /tmp o232
echo "end $(date +%T)"
