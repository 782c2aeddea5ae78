#!/bin/bash
# sixteenth session, run 56: issue 51, where the syncing 1:2:4 split's standing bias comes from (the weight-1
# user 0.155 of the work against 0.143 in ~40 passes, the weight-4 user 0.552 against 0.571): share beside none,
# traced (GPUWB_PACING_TRACE: every worker's segments and the arbiter's decisions with the users' virtual times),
# the traces brought back for benchmarks/fairness_bias.py.
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run56.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr
GPUWB_PACING_TRACE=/tmp/tr timeout 300 python3 benchmarks/fairness.py --calibrate none --policies none,share \
  --scenarios sync-1:2:4 --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair56.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair56.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair56.log | head -4
ls -la /tmp/tr /tmp/tr/* | head -30
tar czf $OUT/traces56.tgz -C /tmp tr
ls -la $OUT
echo "end $(date +%T)"
