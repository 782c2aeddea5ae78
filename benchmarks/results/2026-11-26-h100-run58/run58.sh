#!/bin/bash
# sixteenth session, run 58: issue 51, the syncing 1:2:4 users under share: the session's start (before,
# a641c38), the bank's floor in the lesser weight (floor, 2f4887b) and that with a release's assumption settled
# both ways (clean), alternating, two passes.
# Before the call, here: clean exports of the three commits into .gpu/before, .gpu/floor, .gpu/clean (git
#   archive, docs and benchmarks/results left out), REV files; run(command="bash .gpu/run58.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in 1 2; do
  order="before floor clean"; [ $pass = 2 ] && order="clean floor before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 150 python3 benchmarks/fairness.py --calibrate none --policies share --scenarios sync-1:2:4 \
      --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f58-$pass-$side.json 2>&1 \
      | grep -v 'auth refused' > /tmp/f58.log
    grep -E "^[a-z0-9:+-]+ +(none|share)" /tmp/f58.log | head -2
    cd ../..
  done
done
echo "end $(date +%T)"
