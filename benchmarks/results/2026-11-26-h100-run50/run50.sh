#!/bin/bash
# fifteenth session, run 50: run 49's A/B again on the loops the change is for, per-iteration medians
# (held_loops.py heat2d) and programs.py --rounds 5 (heat2d, logistic regression, stencil), alternating.
# The same exports as run 49 (.gpu/before a6f531c, .gpu/clean 6f38d84).
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
    timeout 100 python3 benchmarks/held_loops.py --iterations 300 --rounds 3 --loops heat2d --own-pools --transports ipc \
      --devices 0 --policy share --json $OUT/h50-$pass-$side.json > /tmp/h50.log 2>&1
    grep -E "^(local|proxy)" /tmp/h50.log | head -3
    timeout 100 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc --devices 0 --policy share \
      --programs heat2d,logistic_regression,stencil --json $OUT/p50-$pass-$side.json > /tmp/p50.log 2>&1
    grep -E "^(heat2d|logistic|stencil) " /tmp/p50.log
    cd ../..
  done
done
echo "end $(date +%T)"
