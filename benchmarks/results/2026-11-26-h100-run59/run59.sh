#!/bin/bash
# sixteenth session, run 59: issue 51, the standing with the session's two arbiter changes (ff31793: the bank's
# floor in the lesser weight, a release's assumption settled both ways): share beside none in every issue-51
# scenario (as run 40), then the syncing 1:2:4 users before (a641c38) / after, alternating, two more passes.
# Before the call, here: clean exports into .gpu/before and .gpu/clean, REV files; run(command="bash .gpu/run59.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "standing rev $(cat REV) $(date +%T)"
timeout 330 python3 benchmarks/fairness.py --calibrate none --policies none,share \
  --scenarios sync-1:2:4,sync-1:1,sync-long-vs-small,interactive+2048,dl-mix,alone-sync,three-1:2:4 \
  --long 8192 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair59.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair59.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair59.log | head -14
cd ../..
for pass in 3 4; do
  order="before clean"; [ $pass = 4 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 100 python3 benchmarks/fairness.py --calibrate none --policies share --scenarios sync-1:2:4 \
      --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/f59-$pass-$side.json 2>&1 \
      | grep -v 'auth refused' > /tmp/f59.log
    grep -E "^[a-z0-9:+-]+ +(none|share)" /tmp/f59.log | head -2
    cd ../..
  done
done
echo "end $(date +%T)"
