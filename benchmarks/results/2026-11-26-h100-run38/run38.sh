#!/bin/bash
# fourteenth session, run 38 (issue 51): share against share+nap500 beside none, twice over (the policies'
# order reversed the second time), syncing users 1:2:4 and 1:1: run 37 saw +0.018 of the work and a worse
# split with the nap, each once.
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run38.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in 1 2; do
  order=$([ $pass = 1 ] && echo none,share,share+nap500 || echo share+nap500,share,none)
  echo "pass $pass ($order) rev $(cat REV) $(date +%T)"
  timeout 200 python3 benchmarks/fairness.py --calibrate none --policies $order \
    --scenarios sync-1:2:4,sync-1:1 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json $OUT/fair38-$pass.json 2>&1 | grep -v 'auth refused' > $OUT/fair38-$pass.log
  grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair38-$pass.log | head -6
done
echo "end $(date +%T)"
