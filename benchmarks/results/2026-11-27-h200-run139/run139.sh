#!/bin/bash
# twenty-seventh session, run 139 (issues 50 and 51): replies pushed and committed ahead beside
# other users under `share`: fairness.py, none / share / share+nopush side by side, on the
# scenarios with users that read every iteration (syncing 1:2:4, the interactive user beside
# 2048^2 GEMMs and in dl-mix, lone users).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run139.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o139; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share,share+nopush --calibrate none \
  --scenarios sync-1:2:4,interactive+2048,dl-mix,alone-sync,alone-interactive \
  --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->' $O/f.txt | cut -c1-150 | head -60
tar czf $OUT/o139.tgz -C /tmp o139
echo "end $(date +%T)"
