#!/bin/bash
# issue 51, run 15: a lone user under none, fair and share (the new default) in one call; the pacing and share tests on the GPU
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
timeout 330 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
  --scenarios alone-sync,alone-train,alone-2048,alone-interactive,interactive+2048,sync-1:2:4 \
  --long 8192 --seconds 6 --calibrate-seconds 2.5 --lead 2 --devices 0 --json $OUT/fair15.json 2>&1 | grep -v 'auth refused' > $OUT/fair15.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair15.log | head -30
grep -E "alone|\(51\)" $OUT/fair15.log | grep -E "^(fair|share) " | head -40
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider tests/gpu_backend/test_pacing_countdown.py tests/gpu_backend/test_paced_replay.py tests/gpu_backend/test_share_policy.py tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_lone_lead.py tests/gpu_backend/test_release_at_read.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_stretch_replay.py 2>&1 | tail -6 | tee $OUT/tests15.log
