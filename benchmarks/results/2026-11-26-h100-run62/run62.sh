#!/bin/bash
# seventeenth session, run 62: issue 51, where the interactive user's latency beside 2048² GEMMs goes under share
# against none (p99 1.25-1.34x none's in runs 59 and 61), and the deep-queued 1:2:4 users' split (4-5.6 % off),
# traced (GPUWB_PACING_TRACE: workers' segments, the arbiter's decisions, the interactive user's requests), for
# benchmarks/fairness_why.py here; and the worker's phases of the hot sync and chain20 (worker_phases.py) under share.
# Before the call, here: a clean export of HEAD into .gpu/clean, REV; cp this to .gpu/;
#   run(command="bash .gpu/run62.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/tr
GPUWB_PACING_TRACE=/tmp/tr timeout 300 python3 benchmarks/fairness.py --calibrate none --policies none,share \
  --scenarios interactive+2048,three-1:2:4 --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair62.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair62.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair62.log | head -6
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
timeout 150 python3 benchmarks/worker_phases.py --devices 0 --loops hot_sync,chain20 --sides fast,noahead --policy share \
  --reps 1000 --json $OUT/phases62.json 2>&1 | grep -v '^ \|^{\|^}' | head -8
for d in /tmp/tr/*interactive+2048*; do [ -d "$d" ] && python3 benchmarks/fairness_why.py "$d" --slower-than 3 2>&1 | head -40; done
du -sh /tmp/tr
tar czf $OUT/traces62.tgz -C /tmp tr
echo "end $(date +%T)"
