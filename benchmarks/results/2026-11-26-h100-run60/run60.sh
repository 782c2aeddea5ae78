#!/bin/bash
# sixteenth session, run 60: issue 51, users 1:2:4 with deep queues (three-1:2:4) and the syncing ones under
# share, before (a641c38) / after (ff31793), alternating, two passes: does settling a release's assumption
# both ways cost the deep-queued split what it gives the syncing one?
# Before the call, here: clean exports into .gpu/before and .gpu/clean, REV files; run(command="bash .gpu/run60.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in 1 2; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 120 python3 benchmarks/fairness.py --calibrate none --policies share --scenarios three-1:2:4,sync-1:2:4 \
      --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f60-$pass-$side.json 2>&1 \
      | grep -v 'auth refused' > /tmp/f60.log
    grep -E "^[a-z0-9:+-]+ +(none|share)" /tmp/f60.log | head -2
    cd ../..
  done
done
echo "end $(date +%T)"
