#!/bin/bash
# twentieth session, run 85: where the hot sync's and chain20's worker time goes on a GPU host, at e765101 (no change):
# worker_phases.py (the worker's phases, medians) for the fast path and run ahead off, replay_profile.py (the worker's
# cProfile, calls and own time by function) for hot_sync and chain20, and replay_sync.py's hot sync beside them.
# run(command="bash .gpu/run85.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o85
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
  --json /tmp/o85/r.json > /tmp/o85/r.txt 2>&1
grep -E "^(hot_sync|raw)|target" /tmp/o85/r.txt | head -3
timeout 120 python3 benchmarks/worker_phases.py --devices 0 --reps 2000 --loops hot_sync,chain20 --sides fast,noahead --policy share \
  --json /tmp/o85/w.json > /tmp/o85/w.txt 2>&1
head -6 /tmp/o85/w.txt
for loop in hot_sync chain20; do
  timeout 120 python3 benchmarks/replay_profile.py --devices 0 --loop $loop --reps 3000 --policy share --top 60 > /tmp/o85/prof-$loop.txt 2>&1
  grep -E "unprofiled|calls a message" /tmp/o85/prof-$loop.txt
done
tar czf $OUT/o85.tgz -C /tmp o85
echo "end $(date +%T)"
