#!/bin/bash
# issue 51 run 32 and issue 50's lone session, prepared in the thirteenth session (not run: its device
# time ran out). Before the call, here:
#   rm -rf .gpu/clean .gpu/old && mkdir -p .gpu/clean .gpu/old
#   git archive HEAD | tar -x -C .gpu/clean && git rev-parse --short HEAD > .gpu/clean/REV
#   git archive 9b50fa6 | tar -x -C .gpu/old && echo 9b50fa6 > .gpu/old/REV   # (before the lone session's silence)
#   cp benchmarks/results/2026-11-26-h100-issue51-run31/run32.sh .gpu/
# then: run(command="bash .gpu/run32.sh", carry=[".whl", ".gpu"]).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
# (1) share's gap fill against share without it, beside none, one call (docs/fair-share.md, "Filling an anticipated gap")
( cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
  echo "fill: rev $(cat REV) $(date +%T)"
  timeout 280 python3 benchmarks/fairness.py --policies none,share,share+fill --calibrate none \
    --scenarios sync-1:2:4,sync-1:1,interactive+2048,dl-mix \
    --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair32.json 2>&1 \
    | grep -v 'auth refused' > $OUT/fair32.log
  grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair32.log | head -12 )
# (2) a lone session's silence (worker/lease.py idle_quiet): the hot sync and chain20, before and after, interleaved
for which in old clean old clean; do
  ( cd .gpu/$which; export PYTHONPATH=/tmp/site:$PWD
    gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
    echo "lone: $which rev $(cat REV) $(date +%T)"
    timeout 90 python3 benchmarks/replay_sync.py --devices 0 --reps 2000 --loops hot_sync --transports ipc --own-pools 2>&1 | grep -E "^hot_sync|target" | head -2
    timeout 90 python3 benchmarks/held_loops.py --iterations 300 --rounds 3 --loops chain20 --own-pools --transports ipc --devices 0 2>&1 | sed -n 4,5p )
done
echo "end $(date +%T)"
