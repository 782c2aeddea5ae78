#!/bin/bash
# issue 51, run 29: long vs small (deep queues) and lone users, after the twelfth session
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
timeout 250 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
  --scenarios long-vs-small,alone-sync,alone-train,alone-2048 \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair29.json 2>&1 | grep -v 'auth refused' > $OUT/fair29.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair29.log | head -20
