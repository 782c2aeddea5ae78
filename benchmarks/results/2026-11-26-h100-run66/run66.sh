#!/bin/bash
# seventeenth session, run 66: issue 51 beside issue 50's change: the lone path (a lone session's answers from its
# run ahead without the pacer's batch, 6a9332b, and its hand-over when told others wait, 41ba40a, in history as f3135ce after a rewrite that dropped a trace file; the same tree) against the
# session's start (d34c6f0), share beside none: a lone syncing user (the lone path's case), syncing users 1:2:4
# and the interactive user beside 2048² GEMMs (company arriving), one pass each side.
# Before the call, here: clean exports of HEAD (.gpu/clean) and d34c6f0 (.gpu/before); run(command="bash .gpu/run66.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for side in before clean; do
  cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
  echo "$side rev $(cat REV) $(date +%T)"
  timeout 250 python3 benchmarks/fairness.py --calibrate none --policies none,share --scenarios alone-sync,sync-1:2:4,interactive+2048 \
    --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f66-$side.json 2>&1 | grep -v 'auth refused' > $OUT/f66-$side.log
  grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/f66-$side.log | head -6
  grep -E "lone|alone" $OUT/f66-$side.log | head -4
  cd ../..
done
echo "end $(date +%T)"
