#!/bin/bash
# issue 51, run 31: A/B on one host: share as of 8314b25 (forgiven dt/W) against share now (dt/(W+w)), each beside none
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
i=0
for which in old clean clean old; do
  i=$((i+1))
  ( cd .gpu/$which; export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
    echo "pass $i: $which rev $(cat REV) $(date +%T)"
    timeout 75 python3 benchmarks/fairness.py --policies none,share --calibrate none \
      --scenarios sync-1:2:4,sync-long-vs-small \
      --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair31-$i-$which.json 2>&1 | grep -v 'auth refused' > $OUT/fair31-$i-$which.log
    grep -E "^[a-z0-9:+-]+ +(none|share) " $OUT/fair31-$i-$which.log | head -6 )
done
echo "end $(date +%T)"
