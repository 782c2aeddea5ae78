#!/bin/bash
# eighteenth session, run 76: issue 50, no closing reads at once for a replay sent early (run_ahead.start)
# against the tree before, three passes alternating on one
# host, the pool's default policy (share): replay_sync.py's hot sync, held_loops.py's chain20 at the default read bound (50 us)
# and at 300 us (every read at once before), their stretch figures; then the run-ahead GPU tests on CuPy.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean, REV files;
#   run(command="bash .gpu/run76.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o76
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
fig='import json,sys;d=json.load(open(sys.argv[1]));s=d["stretches"]["ipc"];print("  ahead",s.get("ahead"),"read",s.get("ahead_read"),"later",s.get("ahead_read_later"))'
for pass in 1 2 3; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 50 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o76/r-$pass-$side.json > /tmp/o76/r-$pass-$side.txt 2>&1
    grep -E "^(hot_sync|raw)" /tmp/o76/r-$pass-$side.txt | head -2; python3 -c "$fig" /tmp/o76/r-$pass-$side.json 2>/dev/null
    GPUWB_READ_AHEAD_US=300 timeout 50 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 \
      --policy share --json /tmp/o76/h300-$pass-$side.json > /tmp/o76/h300-$pass-$side.txt 2>&1
    echo " read bound 300:"; grep -E "^(local |proxy)" /tmp/o76/h300-$pass-$side.txt | head -2; python3 -c "$fig" /tmp/o76/h300-$pass-$side.json 2>/dev/null
    timeout 50 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o76/h-$pass-$side.json > /tmp/o76/h-$pass-$side.txt 2>&1
    grep -E "^(local |proxy)" /tmp/o76/h-$pass-$side.txt | head -2; python3 -c "$fig" /tmp/o76/h-$pass-$side.json 2>/dev/null
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_run_ahead.py 2>&1 | tail -4
tar czf $OUT/o76.tgz -C /tmp o76
echo "end $(date +%T)"
