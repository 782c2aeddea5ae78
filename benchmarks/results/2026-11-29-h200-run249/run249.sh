#!/bin/bash
# forty-second session, run 249 (issue 50): the float guess's long run before the summed
# model's window (the random walk's 0.1 + 1e-4 * step), against the session's first tree
# (bc062ed, "old": the new benchmark scripts over its library), calls old new new old; then
# cProfiles of the random walk's and Langevin's workers (replay_profile.py) at the new tree.
#   run(command="bash .gpu/run249.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o249; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
P=random_walk,langevin_annealed,mc_option,hot_sync,chain20,lr_decay
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
for p in random_walk langevin_annealed; do
  (cd .gpu/new && echo "profile $p $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop $p --reps 4 --top 40 > $O/prof-$p.txt 2>&1; echo "rc $?"; head -3 $O/prof-$p.txt | cut -c1-200)
done
tar czf $OUT/o249.tgz -C /tmp o249
echo "end $(date +%T)"
