#!/bin/bash
# seventeenth session, run 64: issue 50, run 63's A/B again on the two loops it moved (a lone session's replays
# answered from the run ahead with no batch of the pacer's, 6a9332b, against d34c6f0), three passes alternating,
# the pool's default policy (share): replay_sync.py's hot sync and held_loops.py's chain20, outputs as tables.
# Before the call, here: the exports of run 63 (.gpu/before, .gpu/clean, both with replay_sync.py's --policy);
#   run(command="bash .gpu/run64.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for side in before clean; do
  (cd .gpu/$side && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for pass in 1 2 3; do
  order="before clean"; [ $pass = 2 ] && order="clean before"
  for side in $order; do
    cd .gpu/$side; export PYTHONPATH=/tmp/site:$PWD
    echo "pass $pass $side rev $(cat REV) $(date +%T)"
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      > $OUT/r64-$pass-$side.txt 2>&1
    grep -E "^(hot_sync|raw)" $OUT/r64-$pass-$side.txt | head -2
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      > $OUT/h64-$pass-$side.txt 2>&1
    grep -E "^(local |proxy)" $OUT/h64-$pass-$side.txt | head -2
    cd ../..
  done
done
echo "end $(date +%T)"
