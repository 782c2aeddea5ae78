#!/bin/bash
# issue 51, run 26: share with anticipation only for short batches, beside fair and none
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean; gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so; cd ../..
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 60 python3 -m pytest -q -n 0 -p no:cacheprovider tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_release_at_read.py > $OUT/t26.log 2>&1; tail -1 $OUT/t26.log
mkdir -p /tmp/tr
GPUWB_PACING_TRACE=/tmp/tr timeout 480 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
  --scenarios sync-1:2:4,sync-1:1,three-1:2:4,interactive+2048,dl-mix,sync-long-vs-small \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair26.json 2>&1 | grep -v 'auth refused' > $OUT/fair26.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair26.log | head -10
du -sh /tmp/tr; ls /tmp/tr | head
tar -czf $OUT/traces26.tgz -C /tmp tr; ls -la $OUT
