#!/bin/bash
# fifteenth session, run 44: issue 50, where the whole programs' time goes between the client and
# the worker (step_profile.py --timeline: the worker's message spans beside the client's waits).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 250 python3 benchmarks/step_profile.py --programs nbody,mc_option,monte_carlo_pi,random_walk,logistic_regression,chain20,mlp_training \
  --rounds 2 --devices 0 --transports ipc,ipc-noearly --timeline --json $OUT/steps44.json > $OUT/steps44.log 2>&1
grep -vE "^\s*[\"{}\[\]]" $OUT/steps44.log | head -60
echo "end $(date +%T)"
