#!/bin/bash
# seventeenth session, run 70: issue 50, the reads made at once: READ_NOW_SECONDS at 50 us (27b3985's default)
# against 100 us (GPUWB_READ_AHEAD_US=100) and against none (01de62b), three passes rotating the sides, the
# pool's default policy (share): replay_sync.py's hot sync and held_loops.py's chain20 with their figures
# (runs 68-69: the hot sync's passes with nearly every read made at once were the fastest). Outputs in one tar.
# Before the call, here: the exports of run 68 (.gpu/before, .gpu/clean); run(command="bash .gpu/run70.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o70
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
figures='import json,sys;d=json.load(open(sys.argv[1]));s=d["stretches"]["ipc"];print("  ahead",s.get("ahead"),"read",s.get("ahead_read"),"later",s.get("ahead_read_later"))'
for pass in 1 2 3; do
  case $pass in 1) order="before clean50 clean100";; 2) order="clean100 before clean50";; 3) order="clean50 clean100 before";; esac
  for side in $order; do
    dir=${side%50}; dir=${dir%100}
    read_us=""; [ $side = clean100 ] && read_us=100
    cd .gpu/$dir; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    GPUWB_READ_AHEAD_US=$read_us timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync \
      --devices 0 --policy share --json /tmp/o70/r70-$pass-$side.json > /tmp/o70/r70-$pass-$side.txt 2>&1
    grep -E "^(hot_sync|raw)" /tmp/o70/r70-$pass-$side.txt | head -2
    python3 -c "$figures" /tmp/o70/r70-$pass-$side.json 2>/dev/null
    GPUWB_READ_AHEAD_US=$read_us timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 \
      --policy share --json /tmp/o70/h70-$pass-$side.json > /tmp/o70/h70-$pass-$side.txt 2>&1
    grep -E "^(local |proxy)" /tmp/o70/h70-$pass-$side.txt | head -2
    python3 -c "$figures" /tmp/o70/h70-$pass-$side.json 2>/dev/null
    cd ../..
  done
done
tar czf $OUT/o70.tgz -C /tmp o70
echo "end $(date +%T)"
