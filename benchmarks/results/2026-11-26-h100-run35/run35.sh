#!/bin/bash
# fourteenth session, run 35: (1) issue 51, share as now committed (the fill on, a filler's ops within the
# gap or the window) beside none, traced (GPUWB_PACING_TRACE): where the interactive user's p99 goes beside
# 2048² GEMMs (fairness_why.py), the syncing 1:2:4 and long-vs-small pairs; (2) the stencil run ahead (its in-place write into its own copy
# now early-safe): replay_sync stencil and hot sync, before (e042da2) and after, alternating.
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && rm -rf .gpu/old && mkdir -p .gpu/old
#   && git archive e042da2 | tar -x -C .gpu/old && echo e042da2 > .gpu/old/REV && cp <this> .gpu/;  run(command="bash .gpu/run35.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
for which in old clean; do
  ( cd .gpu/$which; gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c \
      -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null )
done
for which in old clean old clean; do
  ( cd .gpu/$which; export PYTHONPATH=/tmp/site:$PWD
    echo "stencil: $which rev $(cat REV) $(date +%T)"
    timeout 90 python3 benchmarks/replay_sync.py --devices 0 --reps 2000 --loops stencil,hot_sync --transports ipc \
      --own-pools 2>&1 | grep -E "^(stencil|hot_sync|local|target)" )
done
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr
GPUWB_PACING_TRACE=/tmp/tr timeout 200 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios interactive+2048,sync-1:2:4,sync-long-vs-small --long 8192 \
  --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair35.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair35.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair35.log | head -8
for policy in share none; do
  timeout 60 python3 benchmarks/fairness_why.py /tmp/tr/$policy-interactive+2048 --slower-than 2.5 --most 8 \
    > $OUT/why35-$policy.txt 2>&1
  head -30 $OUT/why35-$policy.txt
done
tar czf $OUT/traces35.tgz -C /tmp tr
echo "end $(date +%T)"
