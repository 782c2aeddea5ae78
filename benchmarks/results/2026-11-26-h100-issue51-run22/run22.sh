#!/bin/bash
# issue 51, run 22: A/B on one host: share as of 8220074 (the session's start) against share now, each beside none
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for which in old clean old clean; do
  [ -f $OUT/fair22-$which.json ] && tag=b || tag=a
  ( cd .gpu/$which; export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
    echo "$which $tag rev $(cat REV)" | tee -a $OUT/gpu.txt
    timeout 140 python3 benchmarks/fairness.py --policies none,share --calibrate none \
      --scenarios sync-1:2:4,sync-long-vs-small,interactive+2048,dl-mix \
      --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair22-$which$tag.json 2>&1 | grep -v 'auth refused' > $OUT/fair22-$which$tag.log
    grep -E "^[a-z0-9:+-]+ +(none|share) " $OUT/fair22-$which$tag.log | head -8 )
  touch $OUT/fair22-$which.json
done
