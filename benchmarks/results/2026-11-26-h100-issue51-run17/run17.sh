#!/bin/bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV) (+ a debug print of paced replays)" | tee -a $OUT/gpu.txt
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so
for i in 1 2; do
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 100 python3 -m pytest -q -s -n 0 -p no:cacheprovider tests/gpu_backend/test_stretch_replay.py tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_paced_replay.py 2>&1 > $OUT/t17-$i.log; grep -c "DBG paced" $OUT/t17-$i.log; grep -E "FAILED|passed|failed" $OUT/t17-$i.log | tee -a $OUT/tests17.log
done
timeout 200 python3 benchmarks/fairness.py --policies none,share --calibrate none --scenarios three-1:2:4,dl-mix \
  --long 8192 --seconds 6 --calibrate-seconds 2.5 --lead 2 --devices 0 --json $OUT/fair17.json 2>&1 | grep -v 'auth refused' | grep -v DBG > $OUT/fair17.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair17.log | head -8
