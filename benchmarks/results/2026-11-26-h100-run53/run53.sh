#!/bin/bash
# fifteenth session, run 53: issue 50, where SGD's and the MLP's worker time goes (each uploads its
# minibatch's indices every step; the worker was busy 650-1 600 us an iteration in run 51): the
# worker's cProfile of each whole program (replay_profile.py), and the fast path's misses.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for p in sgd_minibatch mlp_training; do
  timeout 100 python3 benchmarks/replay_profile.py --devices 0 --loop $p --reps 3 --top 50 --policy share > $OUT/prof-$p.txt 2>&1
  head -1 $OUT/prof-$p.txt
done
timeout 100 python3 benchmarks/fast_path_misses.py --devices 0 --runs 1 --programs sgd_minibatch,mlp_training --json $OUT/misses53.json 2>&1 | grep -vE "^\s*[\"{}\[\]]" | head -12
echo "end $(date +%T)"
