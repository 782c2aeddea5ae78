#!/bin/bash
# thirty-ninth session, run 230 (issue 50): is the programs' hot sync slower at 6e9beb2 than
# at 0329560 (run 229: 0.234-0.244 against 0.176-0.177 s a run)? Six alternating calls, mid new
# new mid mid new, of programs.py's hot sync and chain20, each tree's worker phases between.
#   run(command="bash .gpu/run230.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o230; mkdir -p $O
for tree in mid new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
i=0
for tree in mid new new mid mid new; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs hot_sync,chain20 \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
for tree in mid new; do
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --devices 0 --rounds 3 --programs hot_sync --top 12 --json $O/w-$tree.json > $O/w-$tree.txt 2>&1
   echo "phases $tree rc $? $(date +%T)"; grep "^hot_sync" $O/w-$tree.txt | cut -c1-400)
done
tar czf $OUT/o230.tgz -C /tmp o230
echo "end $(date +%T)"
