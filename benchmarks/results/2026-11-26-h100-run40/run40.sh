#!/bin/bash
# fourteenth session, run 40: the standing with this session's defaults (share: the 500 µs nap, the fill
# off), share beside none in every issue-51 scenario; GPU tests of the session's worker changes on CuPy
# (run ahead and early replay of stretches that write their own arrays, the captured norm).
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run40.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "tests rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead.py tests/kernelproxy/test_early_replay.py tests/gpu_backend/test_stretch_replay.py \
  > $OUT/tests40.log 2>&1
tail -4 $OUT/tests40.log
echo "fairness $(date +%T)"
timeout 330 python3 benchmarks/fairness.py --calibrate none --policies none,share \
  --scenarios sync-1:2:4,sync-1:1,sync-long-vs-small,interactive+2048,dl-mix,alone-sync,alone-interactive \
  --long 8192 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair40.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair40.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair40.log | head -14
echo "end $(date +%T)"
