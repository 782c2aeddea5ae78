#!/bin/bash
# fifteenth session, run 48: issue 50, a streamed upload that owns its memory (its loops then answered
# from their templates): before (.gpu/before, 1c5ea2d) / after (.gpu/clean, a6f531c) alternating, the
# programs over large uploaded arrays; where the fast path is left (fast_path_misses.py) after; GPU tests.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs
#   and benchmarks/results left out), REV files; run(command="bash .gpu/run48.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=logistic_regression,sgd_minibatch,kmeans,conjugate_gradient,mlp_training
for pass in 1 2; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --programs $P --json $OUT/p48-$pass-$side.json > $OUT/p48-$pass-$side.log 2>&1
    grep -E "^(logistic|sgd|kmeans|conjugate|mlp)|replays of" $OUT/p48-$pass-$side.log
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "misses $(date +%T)"
timeout 100 python3 benchmarks/fast_path_misses.py --devices 0 --runs 1 --programs $P --json $OUT/misses48.json 2>&1 | grep -vE "^\s*[\"{}\[\]]" | head -20
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 220 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_transfers.py tests/gpu_backend/test_run_ahead.py 2>&1 | tail -4
echo "end $(date +%T)"
