#!/bin/bash
# issue 51, run 20: share, syncing users, with the arbiter's and the workers' traces (diagnosis)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
mkdir -p /tmp/tr
GPUWB_PACING_TRACE=/tmp/tr timeout 300 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:2:4,sync-1:1 \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair20.json 2>&1 | grep -v 'auth refused' > $OUT/fair20.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair20.log | head -10
du -sh /tmp/tr; ls /tmp/tr | head
tar -czf $OUT/traces20.tgz -C /tmp tr; ls -la $OUT
