#!/bin/bash
# twenty-second session, run 100 (part AB, same machine after part A): the hot sync and chain20 at run 77's tree (40ec73e)
# and at HEAD, alternating, three passes each: did issue 51's work since run 77 (usage reports before replies, runs
# ahead beside others, reads in the gaps) cost issue 50's hot path? Then part B: fairness.py, every scenario, none/share.
# Before: clean exports of HEAD into .gpu/clean and of 40ec73e into .gpu/base; run(command="bash .gpu/run100ab.sh", ...)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o100
for tree in base clean; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2 3; do
  for tree in base clean; do
    (cd .gpu/$tree; export PYTHONPATH=/tmp/site:$PWD
     timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
       --json /tmp/o100/ab-r-$tree-$pass.json > /tmp/o100/ab-r-$tree-$pass.txt 2>&1
     echo "$tree $(cat REV) pass $pass: $(grep -E '^hot_sync' /tmp/o100/ab-r-$tree-$pass.txt) | $(grep -E '^raw' /tmp/o100/ab-r-$tree-$pass.txt)"
     timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
       --json /tmp/o100/ab-h-$tree-$pass.json > /tmp/o100/ab-h-$tree-$pass.txt 2>&1
     grep -E "^(local |proxy_ipc)" /tmp/o100/ab-h-$tree-$pass.txt | head -2)
  done
done
echo "fairness $(date +%T)"
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
timeout 450 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,three-1:2:4,sync-long-vs-small,long-vs-small,interactive+2048,dl-mix,alone-sync,alone-interactive \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o100/f.json > /tmp/o100/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -E "^(sync|three|long|interactive|dl-mix|alone)" /tmp/o100/f.txt | head -40; grep -E "i.s replays|MISSED" /tmp/o100/f.txt | head -40
tar czf $OUT/o100ab.tgz -C /tmp o100
echo "end $(date +%T)"
