#!/bin/bash
# issue 51, run 19: share with the read's tail counted till done, anticipation, the lone charge fixed; beside fair and none
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 110 python3 -m pytest -q -n 0 -p no:cacheprovider tests/gpu_backend/test_stretch_replay.py tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_paced_replay.py tests/gpu_backend/test_share_pool.py > $OUT/t19.log 2>&1; grep -E "FAILED|passed|failed" $OUT/t19.log | tail -5
timeout 440 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
  --scenarios sync-1:2:4,sync-1:1,three-1:2:4,interactive+2048,dl-mix \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair19.json 2>&1 | grep -v 'auth refused' > $OUT/fair19.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair19.log | head -40
tail -30 $OUT/fair19.log
