#!/bin/bash
# eighteenth session, run 73: issue 50, prepared answers with the rule that none is prepared where the client's next
# message is already waiting (the worker the slower side), on against off (GPUWB_PREPARED_ANSWERS=0) in one tree,
# three passes alternating: replay_sync.py's hot sync at the default read bound and at 300 us, held_loops.py's chain20;
# then the worker's phases of the hot sync (reads at once forced) on and off.
# Before the call: a clean export of HEAD into .gpu/clean, REV; run(command="bash .gpu/run73.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o73
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV)"
fig='import json,sys;d=json.load(open(sys.argv[1]));s=d["stretches"]["ipc"];print("  ahead",s.get("ahead"),"read",s.get("ahead_read"),"prepared",s.get("prepared"),"missed",s.get("prepared_missed"),"mismatched",s.get("prepared_mismatched"))'
for pass in 1 2 3; do
  order="0 1"; [ $pass = 2 ] && order="1 0"
  for p in $order; do
    export GPUWB_PREPARED_ANSWERS=$p
    echo "pass $pass prepared=$p $(date +%T)"
    timeout 50 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o73/r-$pass-$p.json > /tmp/o73/r-$pass-$p.txt 2>&1
    grep -E "^(hot_sync|raw)" /tmp/o73/r-$pass-$p.txt | head -2; python3 -c "$fig" /tmp/o73/r-$pass-$p.json 2>/dev/null
    GPUWB_READ_AHEAD_US=300 timeout 50 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync \
      --devices 0 --policy share --json /tmp/o73/r300-$pass-$p.json > /tmp/o73/r300-$pass-$p.txt 2>&1
    echo " read bound 300:"; grep -E "^(hot_sync|raw)" /tmp/o73/r300-$pass-$p.txt | head -2; python3 -c "$fig" /tmp/o73/r300-$pass-$p.json 2>/dev/null
    timeout 50 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o73/h-$pass-$p.json > /tmp/o73/h-$pass-$p.txt 2>&1
    grep -E "^(local |proxy)" /tmp/o73/h-$pass-$p.txt | head -2; python3 -c "$fig" /tmp/o73/h-$pass-$p.json 2>/dev/null
  done
done
for p in 0 1; do
  echo "phases prepared=$p $(date +%T)"
  GPUWB_PREPARED_ANSWERS=$p GPUWB_READ_AHEAD_US=300 timeout 60 python3 benchmarks/worker_phases.py --devices 0 --loops hot_sync \
    --sides fast --policy share --reps 2000 --json /tmp/o73/p-$p.json 2>&1 | grep -A1 "^loop/side"
done
tar czf $OUT/o73.tgz -C /tmp o73
echo "end $(date +%T)"
