#!/bin/bash
# issue 51, run 28: run 27 again on another host, with dl-mix and sync-long-vs-small
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "rev $(cat REV)" | tee -a $OUT/gpu.txt
timeout 250 python3 benchmarks/fairness.py --policies none,share,share+window8 --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,three-1:2:4,interactive+2048,dl-mix,sync-long-vs-small \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair28.json 2>&1 | grep -v 'auth refused' > $OUT/fair28.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair28.log | head -20
