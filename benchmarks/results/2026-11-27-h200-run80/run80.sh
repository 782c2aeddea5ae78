#!/bin/bash
# nineteenth session, run 80: issue 50, the hot sync's floor with stretch replay's design: sync_floor.py's graph
# (copy in, graph launch, pinned read) and graph-ahead (the next replay and its read right after each reply) beside
# local, raw, ideal, the pool's executor and a real session, two calls' worth in one; then replay_sync.py's hot sync
# (the pool's, its own pool) twice, on the same host. A clean export of HEAD in .gpu/clean, REV;
# run(command="bash .gpu/run80.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o80
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 200 python3 benchmarks/sync_floor.py --modes local,raw,ideal,graph,graph-ahead,shm-graph-ahead,executor,proxy \
    --reps 2000 --rounds 4 --idle-reps 50 --json /tmp/o80/s-$pass.json > /tmp/o80/s-$pass.txt 2>&1
  grep -v '^ \|^{\|^}' /tmp/o80/s-$pass.txt | head -14
  timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
    --json /tmp/o80/r-$pass.json > /tmp/o80/r-$pass.txt 2>&1
  grep -E "^(hot_sync|raw)|target" /tmp/o80/r-$pass.txt | head -3
done
tar czf $OUT/o80.tgz -C /tmp o80
echo "end $(date +%T)"
