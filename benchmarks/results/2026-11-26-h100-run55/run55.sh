#!/bin/bash
# fifteenth session, run 55: issue 50, every change of the session together (run ahead of large kept results and
# of steps that write their inputs, guessed scalars; a streamed upload that owns its memory; integer-index gathers captured): the session's start
# (.gpu/before, 74bfafd, with HEAD's programs.py for heat2d_2048) / HEAD (.gpu/clean,
# 637da90) alternating, every program of programs.py.
# Before the call, here: clean exports of both commits into .gpu/before and .gpu/clean (git archive, docs
#   and benchmarks/results left out), REV files; run(command="bash .gpu/run55.sh", carry=[".whl", ".gpu"])
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
      --json $OUT/p55-$pass-$side.json > /tmp/p55-$pass-$side.log 2>&1
    grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" /tmp/p55-$pass-$side.log | awk '{printf "%s %s  ", $1, $6} END {print ""}'
    cd ../..
  done
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "end $(date +%T)"
