#!/bin/bash
# fourteenth session, run 39 (issue 51): the nap (500 µs) with share's lead as it is (4 ms) and halved (2 ms),
# beside share and none, twice over in reversed orders: runs 37-38 gave the nap +0.018-0.038 of the syncing
# 1:2:4 users' work and their split 1.6 points worse on average; does a shorter lead keep one and mend the other?
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run39.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in 1 2; do
  order=$([ $pass = 1 ] && echo none,share,share+nap500,share+sharelead2000+nap500 \
          || echo share+sharelead2000+nap500,share+nap500,share,none)
  echo "pass $pass ($order) rev $(cat REV) $(date +%T)"
  timeout 270 python3 benchmarks/fairness.py --calibrate none --policies $order \
    --scenarios sync-1:2:4,interactive+2048 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json $OUT/fair39-$pass.json 2>&1 | grep -v 'auth refused' > $OUT/fair39-$pass.log
  grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair39-$pass.log | head -8
done
echo "end $(date +%T)"
