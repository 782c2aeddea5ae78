#!/bin/bash
# fifteenth session, run 52: issue 50, runs ahead with the loop's scalars guessed (step * 0.5 goes on by
# its step) and a stretch whose runs ahead keep missing sitting out: before (.gpu/before, 6738f95) / after
# (.gpu/clean, 999c6dc) alternating, every program of programs.py, then replay_sync.py's hot sync; then
# the run-ahead GPU tests on CuPy.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs
#   and benchmarks/results left out), REV files; run(command="bash .gpu/run52.sh", carry=[".whl", ".gpu"])
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
    timeout 140 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --json $OUT/p52-$pass-$side.json > /tmp/p52-$pass-$side.log 2>&1
    grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" /tmp/p52-$pass-$side.log | awk '{printf "%s %s  ", $1, $6} END {print ""}'
    timeout 60 python3 benchmarks/replay_sync.py --reps 2000 --own-pools --transports ipc --loops hot_sync --devices 0 \
      --json $OUT/r52-$pass-$side.json > /tmp/r52.log 2>&1
    grep -E "^(local|proxy|raw)|target" /tmp/r52.log | head -4
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 240 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead.py 2>&1 | tail -4
echo "end $(date +%T)"
