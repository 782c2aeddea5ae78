#!/bin/bash
# fourteenth session, run 36: (1) issue 51, where syncing users' work goes under share: share beside share
# with nobody ever held back (a 1 s window) and share with a 16 ms lead, beside none (sync-1:2:4, sync-1:1);
# (2) issue 50, every program of programs.py after heat2d's norm was captured and the stencil runs ahead.
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run36.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 230 python3 benchmarks/fairness.py --policies none,share,share+window1000,share+sharelead16000 --calibrate none \
  --scenarios sync-1:2:4,sync-1:1 --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair36.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair36.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair36.log | head -10
echo "programs $(date +%T)"
timeout 300 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
  --json $OUT/programs36.json > $OUT/programs36.log 2>&1
grep -vE "^\s*[\"{}\[\]]" $OUT/programs36.log | tail -24
echo "end $(date +%T)"
