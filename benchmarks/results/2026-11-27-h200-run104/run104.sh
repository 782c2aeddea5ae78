#!/bin/bash
# twenty-fourth session, run 104: the steady lane (worker/steady_lane.py) on and off, alternating on one machine:
# replay_sync.py's hot sync and held_loops.py's chain20 and heat2d, two passes each side; then every program of
# programs.py (lane on, the defaults), unseen_loops.py against local CuPy (the lane on), and the GPU tests of the
# lane and the run ahead on CuPy.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run104.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o104
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  for lane in 1 0; do
    export GPUWB_STEADY_LANE=$lane
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o104/r-$pass-$lane.json > /tmp/o104/r-$pass-$lane.txt 2>&1
    echo "pass $pass lane $lane"; grep -E "^(hot_sync|raw)|target" /tmp/o104/r-$pass-$lane.txt | head -3
    timeout 90 python3 benchmarks/held_loops.py --loops chain20,heat2d --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o104/h-$pass-$lane.json > /tmp/o104/h-$pass-$lane.txt 2>&1
    grep -E "^(local|proxy|chain20|heat2d)" /tmp/o104/h-$pass-$lane.txt | head -8
  done
done
unset GPUWB_STEADY_LANE
echo "programs $(date +%T)"
timeout 240 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --json /tmp/o104/p.json > /tmp/o104/p.txt 2>&1
grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|met|bitwise|^program" /tmp/o104/p.txt | head -40
echo "unseen $(date +%T)"
timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json /tmp/o104/u.json > /tmp/o104/u.txt 2>&1
echo "unseen rc $?"; tail -25 /tmp/o104/u.txt
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py \
  > /tmp/o104/t.txt 2>&1
echo "tests rc $?"; tail -5 /tmp/o104/t.txt
tar czf $OUT/o104.tgz -C /tmp o104
echo "end $(date +%T)"
