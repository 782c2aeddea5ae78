#!/bin/bash
# fifteenth session, run 54: issue 50, a getitem by integer inputs captured (SGD's and the MLP's
# minibatch gathers): before (.gpu/before, d8d05f6) / after (.gpu/clean, 1529a57) alternating, the
# programs that gather by uploaded indices (and chain20 as a control); then the GPU tests of stretch
# replay and run ahead on CuPy.
# Before the call: clean exports of both commits (docs and benchmarks/results left out), REV files;
#   run(command="bash .gpu/run54.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
      --programs sgd_minibatch,mlp_training,kmeans,chain20 --json $OUT/p54-$pass-$side.json > /tmp/p54.log 2>&1
    grep -E "^(sgd_minibatch|mlp_training|kmeans|chain20) " /tmp/p54.log
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "tests $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_run_ahead.py 2>&1 | tail -4
echo "end $(date +%T)"
