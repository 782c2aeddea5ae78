#!/bin/bash
# fifteenth session, run 49: issue 50, a step that writes its inputs in place is run ahead (its writes
# copied into the client's arrays when asked for): before (.gpu/before, a6f531c) / after (.gpu/clean,
# 6f38d84) alternating, every program of programs.py; then the stretch-replay GPU tests on CuPy.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs
#   and benchmarks/results left out), REV files; run(command="bash .gpu/run49.sh", carry=[".whl", ".gpu"])
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
      --json $OUT/p49-$pass-$side.json > /tmp/p49-$pass-$side.log 2>&1
    grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" /tmp/p49-$pass-$side.log | awk '{printf "%s %s  ", $1, $6} END {print ""}'
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 240 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_stretch_replay.py tests/kernelproxy/test_early_replay.py \
  tests/kernelproxy/test_stretch_fast_path.py 2>&1 | tail -4
echo "end $(date +%T)"
