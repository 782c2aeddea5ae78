#!/bin/bash
# thirty-sixth session, run 208 (issue 51's figures after issue 50's change): a measured run ahead is
# now learnt when answered (Pacer.harvested), which gates runs ahead beside others: fairness.py's
# syncing 1:2:4, the interactive user beside 2048² GEMMs, and dl-mix, `none` and
# `share`, one pass.
#   run(command="bash .gpu/run208.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o208; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 320 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:2:4,interactive+2048,dl-mix \
  --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->' $O/f.txt | cut -c1-150 | head -40
cd ../..
tar czf $OUT/o208.tgz -C /tmp o208
echo "end $(date +%T)"
