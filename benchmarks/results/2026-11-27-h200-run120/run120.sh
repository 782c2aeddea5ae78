#!/bin/bash
# twenty-fifth session, run 120: fused_loop with cupy.fuse fused in the pool and unfused
# (GPUWB_FUSE=0, side ipc-nofuse), alternating in one call; step_profile of both sides.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run120.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o120
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nofuse --devices 0 --policy share \
  --programs fused_loop --json /tmp/o120/p.json > /tmp/o120/p.txt 2>&1
echo "programs rc $?"; head -3 /tmp/o120/p.txt; grep -E "replays of held" /tmp/o120/p.txt
timeout 100 python3 benchmarks/step_profile.py --programs fused_loop --rounds 3 --devices 0 --transports ipc,ipc-nofuse \
  --json /tmp/o120/sp.json > /tmp/o120/sp.txt 2>&1
echo "step_profile rc $?"; grep -A4 "program / side" /tmp/o120/sp.txt | head -8
tar czf $OUT/o120.tgz -C /tmp o120
echo "end $(date +%T)"
