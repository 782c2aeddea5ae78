#!/bin/bash
# seventeenth session, run 67: issue 51, where the interactive user's time goes beside 2048² GEMMs under share
# against none (run 66: p99 2.92 ms against 1.36, run 62: 7.24 against 7.86): fairness.py with the pacing traces
# (GPUWB_PACING_TRACE: the requests' issue times and latencies, the arbiter's decisions) and every worker's
# message spans (GPUWB_WORKER_PHASES: each message's start, whether it woke a sleeping poll, its end), brought
# back for the join here (each request: issued -> its worker's message start -> its end -> the reply read).
# Before the call, here: the export of HEAD in .gpu/clean; run(command="bash .gpu/run67.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr /tmp/ph
GPUWB_PACING_TRACE=/tmp/tr GPUWB_WORKER_PHASES=/tmp/ph timeout 200 python3 benchmarks/fairness.py --calibrate none \
  --policies none,share --scenarios interactive+2048 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json $OUT/f67.json 2>&1 | grep -v 'auth refused' > $OUT/f67.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/f67.log | head -4
ls /tmp/tr /tmp/ph | head -30
tar czf $OUT/tr67.tgz -C /tmp tr ph
echo "end $(date +%T)"
