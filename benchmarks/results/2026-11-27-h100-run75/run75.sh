#!/bin/bash
# eighteenth session, run 75: issue 50, the read bound alone (GPUWB_READ_AHEAD_US: a run ahead's closing reads made at
# once where its measured device time is at most this) on the tree without the yield (953122d, .gpu/before): 50 us (the
# default) against 300 us, three passes alternating, the hot sync and chain20 (run 74: the hot sync 158.5 -> 128.2 us
# mean at 300 in that tree; run 70 of the seventeenth session: chain20 lost 15 % at 100 us in one pass).
# run(command="bash .gpu/run75.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o75
cd .gpu/before; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV)"
fig='import json,sys;d=json.load(open(sys.argv[1]));s=d["stretches"]["ipc"];print("  ahead",s.get("ahead"),"read",s.get("ahead_read"),"later",s.get("ahead_read_later"))'
for pass in 1 2 3; do
  order="50 300"; [ $pass = 2 ] && order="300 50"
  for b in $order; do
    export GPUWB_READ_AHEAD_US=$b
    echo "pass $pass bound $b $(date +%T)"
    timeout 50 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o75/r-$pass-$b.json > /tmp/o75/r-$pass-$b.txt 2>&1
    grep -E "^(hot_sync|raw)" /tmp/o75/r-$pass-$b.txt | head -2; python3 -c "$fig" /tmp/o75/r-$pass-$b.json 2>/dev/null
    timeout 50 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o75/h-$pass-$b.json > /tmp/o75/h-$pass-$b.txt 2>&1
    grep -E "^(local |proxy)" /tmp/o75/h-$pass-$b.txt | head -2; python3 -c "$fig" /tmp/o75/h-$pass-$b.json 2>/dev/null
  done
done
tar czf $OUT/o75.tgz -C /tmp o75
echo "end $(date +%T)"
