#!/bin/bash
# twenty-fifth session, run 119: fused_loop's floor on local CuPy (a stretch eager, and as one
# CUDA graph: fused_floor.py) beside the pool's stretch (step_profile.py --timeline).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run119.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o119
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 100 python3 benchmarks/fused_floor.py --json /tmp/o119/f.json > /tmp/o119/f.txt 2>&1
echo "floor rc $?"; head -6 /tmp/o119/f.txt; grep -E "Error|error" /tmp/o119/f.txt | head -5
timeout 150 python3 benchmarks/step_profile.py --programs fused_loop,chain20 --rounds 3 --devices 0 --transports ipc --timeline \
  --json /tmp/o119/sp.json > /tmp/o119/sp.txt 2>&1
echo "step_profile rc $?"; grep -B2 -A12 "program / side" /tmp/o119/sp.txt | head -30
tar czf $OUT/o119.tgz -C /tmp o119
echo "end $(date +%T)"
