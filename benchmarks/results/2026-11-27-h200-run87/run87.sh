#!/bin/bash
# twentieth session, run 87: issue 51, light users with the batch bound (the commit after b02582b), traced: none, share and
# share+lightgap4 on the scenarios with an interactive user, long vs small (where run 86's second pass lost a session under
# share+lightgap4) and the syncing 1:2:4 users, the arbiter's decisions kept (GPUWB_PACING_TRACE), the pool's log whole.
# run(command="bash .gpu/run87.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr87
GPUWB_PACING_TRACE=/tmp/tr87 timeout 500 python3 benchmarks/fairness.py --calibrate none --policies none,share,share+lightgap4 \
  --scenarios interactive+2048,dl-mix,long-vs-small,sync-1:2:4 --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/tr87/f.json > /tmp/tr87/f.log 2>&1
grep -A14 "^scenario " /tmp/tr87/f.log | head -15
grep -v "auth refused\| done$" /tmp/tr87/f.log | grep -i "error\|exit\|lost\|arbiter\|Traceback" | head -20
ls /tmp/tr87 | head -30; du -sh /tmp/tr87
tar czf $OUT/tr87.tgz -C /tmp tr87
echo "end $(date +%T)"
