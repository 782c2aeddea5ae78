#!/bin/bash
# thirty-eighth session, run 220 (issue 51): a second pass of a loop's round trips charged
# (share+gapcharge2; share+gapcharge1: only gaps up to 1 ms) beside share and none, now with a
# return capped at the user furthest ahead (all three share sides); the scenarios whose users
# differ in their round trips, those whose users are alike, the interactive user beside 2048²
# GEMMs and a lone trainer.
#   run(command="bash .gpu/run220.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o220; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 570 python3 benchmarks/fairness.py --policies none,share,share+gapcharge2,share+gapcharge1 --calibrate none \
  --scenarios dl-mix,mixed-1:2:4,many-sync,sync-1:2:4,sync-long-vs-small,interactive+2048,alone-train \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->|refused|done$' $O/f.txt | cut -c1-150 | head -40
cd ../..
tar czf $OUT/o220.tgz -C /tmp o220
echo "end $(date +%T)"
