#!/bin/bash
# sixteenth session, run 61: issue 51, the bank's floor as the loosest over the users with work (min, the final
# rule) on the syncing and the deep-queued users 1:2:4 and the interactive user beside 2048² GEMMs, share beside
# none, two passes of the syncing users.
# Before the call, here: a clean export of HEAD into .gpu/clean, REV; run(command="bash .gpu/run61.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 200 python3 benchmarks/fairness.py --calibrate none --policies none,share --scenarios sync-1:2:4,three-1:2:4,interactive+2048 \
  --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f61-1.json 2>&1 | grep -v 'auth refused' > $OUT/f61-1.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/f61-1.log | head -6
timeout 100 python3 benchmarks/fairness.py --calibrate none --policies share --scenarios sync-1:2:4 \
  --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f61-2.json 2>&1 | grep -v 'auth refused' > /tmp/f61.log
grep -E "^[a-z0-9:+-]+ +(none|share)" /tmp/f61.log | head -2
echo "end $(date +%T)"
