#!/bin/bash
# thirty-eighth session, run 219 (issue 51): a loop's round trips charged to its user
# (share+gapcharge2) beside share as it was, share with every session at the workers' 4 ms
# lead (share+deeplead4: six equal users all launch 16 ms deep today) and none, in one call:
# the scenarios whose users differ in their round trips (mixed-1:2:4, sync-long-vs-small,
# dl-mix) and those whose users are alike (many-sync, sync-1:2:4).
#   run(command="bash .gpu/run219.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o219; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share,share+gapcharge2,share+deeplead4 --calibrate none \
  --scenarios mixed-1:2:4,sync-long-vs-small,dl-mix,many-sync,sync-1:2:4 \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->|refused' $O/f.txt | cut -c1-150 | head -70
cd ../..
tar czf $OUT/o219.tgz -C /tmp o219
echo "end $(date +%T)"
