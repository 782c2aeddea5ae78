#!/bin/bash
# seventeenth session, run 63: issue 50, a lone session's replays answered from the one run ahead with no batch
# of the pacer's (6a9332b; both sides with replay_sync.py of 11b05be, its --policy) against the session's start (d34c6f0), the pool's default policy (share: a lone
# session holds a lease), alternating twice: replay_sync.py's hot sync, held_loops.py's chain20, every program
# of programs.py; the worker's phases of the hot sync in pass 1; then the run-ahead GPU tests on CuPy.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs and
#   benchmarks/results left out), REV files; run(command="bash .gpu/run63.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 60 python3 benchmarks/replay_sync.py --reps 2000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json $OUT/r63-$pass-$side.json > /tmp/r63.log 2>&1
    grep -E "^(hot_sync|raw)|target" /tmp/r63.log | head -3
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json $OUT/h63-$pass-$side.json > /tmp/h63.log 2>&1
    grep -E "^(local|proxy)" /tmp/h63.log | head -3
    timeout 140 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --json $OUT/p63-$pass-$side.json > /tmp/p63-$pass-$side.log 2>&1
    grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" /tmp/p63-$pass-$side.log | awk '{printf "%s %s  ", $1, $6} END {print ""}'
    if [ $pass = 1 ]; then
      timeout 60 python3 benchmarks/worker_phases.py --devices 0 --loops hot_sync,chain20 --sides fast --policy share --reps 1000 \
        --json $OUT/w63-$side.json 2>&1 | grep -v '^ \|^{\|^}' | head -3
    fi
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py 2>&1 | tail -4
echo "end $(date +%T)"
