#!/bin/bash
# twenty-first session, run 94: issue 51, why the interactive user beside a 2048² GEMM user waits longer under share
# (p50 0.8-2.4 ms, p99 2.9-3.6 ms in runs 86-92) than under none (p50 0.55-0.9, p99 1.2-2.9): both users weigh 1, so both
# get the deep lead (16 ms of work launched ahead beside others, arbiter/share.py lead_for); share+deeplead0 (every
# session at the workers' own 4 ms) and share+deeplead0+sharelead1000 (1 ms) beside share and none, three passes.
# run(command="bash .gpu/run94.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o94
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2 3; do
  timeout 180 python3 benchmarks/fairness.py --policies none,share,share+deeplead0,share+deeplead0+sharelead1000 \
    --calibrate none --scenarios interactive+2048 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json /tmp/o94/f$pass.json > /tmp/o94/f$pass.txt 2>&1
  echo "pass $pass rc $? $(date +%T)"
  grep "^interactive+2048 " /tmp/o94/f$pass.txt
done
tar czf $OUT/o94.tgz -C /tmp o94
echo "end $(date +%T)"
