#!/bin/bash
# nineteenth session, run 82: issue 51, why the heaviest syncing user loses share with the deep lead (run 81): share and
# share+deeplead16 beside none on sync-1:2:4 and interactive+2048, traced (GPUWB_PACING_TRACE: the workers' segments and
# the arbiter's decisions with the users' virtual times), the traces brought back.
# run(command="bash .gpu/run82.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr82
GPUWB_PACING_TRACE=/tmp/tr82 timeout 400 python3 benchmarks/fairness.py --calibrate none --policies none,share,share+deeplead16 \
  --scenarios sync-1:2:4,interactive+2048 --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/tr82/f.json 2>&1 \
  | grep -v 'auth refused' > /tmp/tr82/f.log
grep -A8 "^scenario " /tmp/tr82/f.log | head -9
ls /tmp/tr82 | head -30; du -sh /tmp/tr82
tar czf $OUT/tr82.tgz -C /tmp tr82
echo "end $(date +%T)"
