#!/bin/bash
# seventeenth session, run 68: issue 50, a short replay run ahead making its closing reads at once (27b3985)
# against the lone path alone (01de62b), three passes alternating, the pool's default policy (share):
# replay_sync.py's hot sync and held_loops.py's chain20 (their stretch figures: ahead_read), then the run-ahead
# GPU tests on CuPy. Outputs in one tar.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean, REV files;
#   run(command="bash .gpu/run68.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o68
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2 3; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o68/r68-$pass-$side.json > /tmp/o68/r68-$pass-$side.txt 2>&1
    grep -E "^(hot_sync|raw)" /tmp/o68/r68-$pass-$side.txt | head -2
    python3 -c "import json,sys;d=json.load(open(sys.argv[1]));s=d['stretches']['ipc'];print('  ahead',s.get('ahead'),'alone',s.get('ahead_alone'),'read',s.get('ahead_read'),'later',s.get('ahead_read_later'))" /tmp/o68/r68-$pass-$side.json 2>/dev/null
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o68/h68-$pass-$side.json > /tmp/o68/h68-$pass-$side.txt 2>&1
    grep -E "^(local |proxy)" /tmp/o68/h68-$pass-$side.txt | head -2
    python3 -c "import json,sys;d=json.load(open(sys.argv[1]));s=d['stretches']['ipc'];print('  ahead',s.get('ahead'),'alone',s.get('ahead_alone'),'read',s.get('ahead_read'),'later',s.get('ahead_read_later'))" /tmp/o68/h68-$pass-$side.json 2>/dev/null
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py 2>&1 | tail -4
tar czf $OUT/o68.tgz -C /tmp o68
echo "end $(date +%T)"
