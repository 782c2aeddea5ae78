#!/bin/bash
# thirty-first session, run 159 (issue 50): the standing at this session's end, one call:
# programs.py (every program, ipc against local CuPy, three rounds) and replay_sync.py
# (every loop), the tree with yielding spins and products inside the graphs.
#   run(command="bash .gpu/run159.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o159; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/replay_sync.py --devices 0 --reps 1000 --own-pools --transports ipc --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +[0-9.]+ +[0-9.]+ |^raw" $O/r.txt | cut -c1-110
timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p.txt | cut -c1-100
cd ../..
tar czf $OUT/o159.tgz -C /tmp o159
echo "end $(date +%T)"
