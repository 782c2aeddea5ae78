#!/bin/bash
# thirty-ninth session, run 226 (issue 50): a float parameter's guess at once where the summed
# model got every step of its window (and each window's scores kept for the next guess),
# against the tree before it (066354b), alternating calls old new new old: programs.py on the
# loops whose parameters step (the hot sync's step * 0.5, the random walk's 0.1 + 1e-4 * step,
# ...) and chain20 as the control, replay_sync.py's hot sync and time_step; the new tree's
# worker phases for the hot sync.
#   run(command="bash .gpu/run226.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o226; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=hot_sync,random_walk,langevin_annealed,ista_continuation,chain20
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,time_step,walk_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -vE "^ |^\{|^\}|^-|^loop" $O/r-$i-$tree.txt | head -6 | cut -c1-120)
done
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/program_phases.py --devices 0 --rounds 3 --programs hot_sync --top 22 --json $O/w.json > $O/w.txt 2>&1
 echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | grep -v "the last run" | cut -c1-700)
tar czf $OUT/o226.tgz -C /tmp o226
echo "end $(date +%T)"
