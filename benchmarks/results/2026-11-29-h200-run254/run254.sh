#!/bin/bash
# forty-second session, run 254 (issue 50): the session's tree against its first (bc062ed,
# "old": the new benchmark scripts over its library), calls old new new old: replay_sync.py's
# hot sync (no float: the control for run 253's 99.5 µs), its loops with floats that step
# (time_step, decay_step, anneal_step, walk_step), then the drawing programs, five rounds a
# call.
#   run(command="bash .gpu/run254.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o254; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,time_step,decay_step,anneal_step,walk_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(hot|time|decay|anneal|walk)|raw round" $O/r-$i-$tree.txt | cut -c1-100)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc --devices 0 --programs random_walk,langevin_annealed,mc_option,monte_carlo_pi,hot_sync \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o254.tgz -C /tmp o254
echo "end $(date +%T)"
