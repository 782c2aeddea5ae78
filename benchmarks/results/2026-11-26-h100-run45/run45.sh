#!/bin/bash
# fifteenth session, run 45: issue 50, a run ahead's kept results up to an eighth of the session's memory
# limit (n-body's ~100 MB of named temporaries): before (.gpu/before, 74bfafd) / after (.gpu/clean)
# alternating, programs.py on n-body (and chain20, stencil as controls); then the run-ahead tests on CuPy.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive), REV files;
#   run(command="bash .gpu/run45.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2; do
  for side in before clean; do
    [ $pass = 2 ] && side=$([ $side = before ] && echo clean || echo before)
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --programs nbody,chain20,stencil --json $OUT/p45-$pass-$side.json > $OUT/p45-$pass-$side.log 2>&1
    grep -E "^(nbody|chain20|stencil) |replays of" $OUT/p45-$pass-$side.log
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -x \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_early_replay.py 2>&1 | tail -4
echo "end $(date +%T)"
