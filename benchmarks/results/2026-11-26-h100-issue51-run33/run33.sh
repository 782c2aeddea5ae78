#!/bin/bash
# fourteenth session, run 33: (1) share's gap fill again, beside none, with the long-vs-small syncing pair
# (run 32 measured it once); (2) where heat2d's and the stencil's replays spend the worker's time (cProfile).
# Before the call, here: rm -rf .gpu/clean && mkdir -p .gpu/clean && git archive HEAD | tar -x -C .gpu/clean
#   && git rev-parse --short HEAD > .gpu/clean/REV && cp <this> .gpu/;  run(command="bash .gpu/run33.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 330 python3 benchmarks/fairness.py --policies none,share,share+fill --calibrate none \
  --scenarios sync-1:2:4,sync-1:1,sync-long-vs-small,interactive+2048 \
  --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair33.json 2>&1 \
  | grep -v 'auth refused' > $OUT/fair33.log
grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair33.log | head -14
for spec in heat2d:5 stencil:1000 chain20:5; do
  loop=${spec%:*}; reps=${spec#*:}
  echo "profile $loop $(date +%T)"
  timeout 120 python3 benchmarks/replay_profile.py --devices 0 --loop $loop --reps $reps --policy share --top 40 > $OUT/prof-$loop.txt 2>&1
  grep -E "us an iteration|function calls" $OUT/prof-$loop.txt | head -3
done
echo "end $(date +%T)"
