#!/bin/bash
# twenty-sixth session, run 129: run 128's two failures looked at again. The draws-ahead tests
# with a long pause every sixth step (two-draws was never run ahead under -n 8 in run 128), and
# the steady lane's tests; the lane's 512 bytes probed (..-run128/lane_memory_probe.py, copied).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   cp benchmarks/results/2026-11-27-h200-run128/lane_memory_probe.py .gpu/;
#   run(command="bash .gpu/run129.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o129
cp .gpu/lane_memory_probe.py /tmp/o129/
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 90 python3 /tmp/o129/lane_memory_probe.py 2>&1 | grep -v Warning | tail -4
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py \
  > /tmp/o129/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR|^E  " /tmp/o129/t.txt | tail -10
tar czf $OUT/o129.tgz -C /tmp o129
echo "end $(date +%T)"
