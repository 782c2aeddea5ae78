#!/bin/bash
# twenty-fourth session, run 110: the steady lane with float parameters that step (programs.py's hot sync,
# float((x + step * 0.5).sum())): programs.py's hot_sync, chain20 and stencil with the lane on and off, alternating,
# two passes; the lane's GPU tests.
# Before: a clean export of the commit into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run110.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o110
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  for lane in 1 0; do
    export GPUWB_STEADY_LANE=$lane
    timeout 90 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --programs hot_sync,chain20,stencil --json /tmp/o110/p-$pass-$lane.json > /tmp/o110/p-$pass-$lane.txt 2>&1
    echo "pass $pass lane $lane"; grep -E "^(hot_sync|chain20|stencil) " /tmp/o110/p-$pass-$lane.txt
  done
done
unset GPUWB_STEADY_LANE
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py > /tmp/o110/t.txt 2>&1
echo "tests rc $?"; tail -2 /tmp/o110/t.txt
tar czf $OUT/o110.tgz -C /tmp o110
echo "end $(date +%T)"
