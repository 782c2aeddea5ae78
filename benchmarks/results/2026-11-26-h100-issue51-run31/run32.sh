#!/bin/bash
# issue 51, run 32: share letting users held back into an anticipated user's gap, against share without it, beside none, one call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/fairness.py --policies none,share,share+fill --calibrate none \
  --scenarios sync-1:2:4,sync-1:1 \
  --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair32.json 2>&1 | grep -v 'auth refused' > $OUT/fair32.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair32.log | head -8
echo "end $(date +%T)"
