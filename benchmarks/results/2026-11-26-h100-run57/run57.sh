#!/bin/bash
# sixteenth session, run 57: issue 51, the bank's floor in the lesser weight (clean) against the session's
# start (before, a641c38): the syncing 1:2:4 users under share, alternating, three passes each side, then
# none and the deep-queued three-1:2:4 once on the new code.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs and
#   benchmarks/results left out), REV files; run(command="bash .gpu/run57.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in 1 2 3; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 150 python3 benchmarks/fairness.py --calibrate none --policies share --scenarios sync-1:2:4 \
      --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f57-$pass-$side.json 2>&1 \
      | grep -v 'auth refused' > /tmp/f57.log
    grep -E "^[a-z0-9:+-]+ +(none|share)" /tmp/f57.log | head -2
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "none and deep-queued $(date +%T)"
timeout 200 python3 benchmarks/fairness.py --calibrate none --policies none,share --scenarios sync-1:2:4,three-1:2:4 \
  --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f57-deep.json 2>&1 \
  | grep -v 'auth refused' > $OUT/f57-deep.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/f57-deep.log | head -6
echo "end $(date +%T)"
