#!/bin/bash
# fourteenth session, run 37 (issue 51): a free-running session's hold-back woken every 250 or 500 µs
# (GPUWB_SHARE_NAP_US) against share as it is and none; with nobody held back too.
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run37.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
timeout 330 python3 benchmarks/fairness.py --calibrate none \
  --policies none,share,share+nap500,share+nap250,share+window1000+nap250 \
  --scenarios sync-1:2:4,sync-1:1,interactive+2048 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json $OUT/fair37.json 2>&1 | grep -v 'auth refused' > $OUT/fair37.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair37.log | head -16
echo "end $(date +%T)"
