#!/bin/bash
# fourteenth session, run 34: (1) issue 51, share with the gap fill on (the new default; a filler's ops
# must fit the gap) against share+nofill, beside none, every syncing scenario and dl-mix (--long 8192);
# (2) issue 50, heat2d's norm captured: held_loops heat2d/chain20, before (b292d5d) and after, alternating;
# programs.py heat2d/stencil bitwise; GPU tests of stretch replay on CuPy.
# Before the call, here: rm -rf .gpu/clean .gpu/old && mkdir -p .gpu/clean .gpu/old
#   && git archive HEAD | tar -x -C .gpu/clean && git rev-parse --short HEAD > .gpu/clean/REV
#   && git archive b292d5d | tar -x -C .gpu/old && echo b292d5d > .gpu/old/REV && cp <this> .gpu/
#   run(command="bash .gpu/run34.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for which in old clean; do
  ( cd .gpu/$which; gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c \
      -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null )
done
( cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
  echo "fill: rev $(cat REV) $(date +%T)"
  timeout 300 python3 benchmarks/fairness.py --policies none,share,share+nofill --calibrate none \
    --scenarios sync-1:2:4,sync-1:1,sync-long-vs-small,interactive+2048,dl-mix --long 8192 \
    --seconds 7 --calibrate-seconds 2 --lead 2 --devices 0 --json $OUT/fair34.json 2>&1 \
    | grep -v 'auth refused' > $OUT/fair34.log
  grep -E "^[a-z0-9:+-]+ +(none|share)" $OUT/fair34.log | head -16 )
for which in old clean old clean; do
  ( cd .gpu/$which; export PYTHONPATH=/tmp/site:$PWD
    echo "heat2d: $which rev $(cat REV) $(date +%T)"
    timeout 100 python3 benchmarks/held_loops.py --iterations 300 --rounds 3 --loops heat2d,chain20 --own-pools \
      --transports ipc --devices 0 2>&1 | grep -E "^(local|proxy_ipc) " )
done
( cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
  echo "programs $(date +%T)"
  timeout 120 python3 benchmarks/programs.py --programs heat2d,stencil,chain20,hot_sync --rounds 3 --own-pools \
    --transports ipc --devices 0 --json $OUT/programs34.json 2>&1 | tail -8
  echo "tests $(date +%T)"
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider \
    tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_run_ahead.py 2>&1 | tail -4 )
echo "end $(date +%T)"
