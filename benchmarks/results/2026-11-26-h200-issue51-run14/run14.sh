#!/bin/bash
# issue 51, run 14: none, fair and share (4 ms lead, replays of 4 ms or more paced, no drain on a yield) in one call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
git_rev=$(cat REV 2>/dev/null); echo "rev $git_rev" | tee -a $OUT/gpu.txt
timeout 570 python3 benchmarks/fairness.py --policies none,fair,share+sharelead4000+pacedreplay4000 --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,sync-long-vs-small,interactive+2048,dl-mix,three-1:2:4 \
  --long 8192 --seconds 6 --calibrate-seconds 2.5 --lead 2 --devices 0 --json $OUT/fair14.json 2>&1 | grep -v 'auth refused' > $OUT/fair14.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share[^ ]*) " $OUT/fair14.log | head -40
