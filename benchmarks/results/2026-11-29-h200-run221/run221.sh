#!/bin/bash
# thirty-eighth session, run 221 (issue 51): the new default (a loop's round trips up to 1 ms
# charged, share_gap_charge_ms 1) beside share without it (share+gapcharge0) and none, one call:
# dl-mix and mixed-1:2:4 (where users' round trips differ), interactive+2048 (run 220's one
# pass with a 2 ms bound had p99 3.4 ms), syncing users alike, lone users.
#   run(command="bash .gpu/run221.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o221; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share,share+gapcharge0 --calibrate none \
  --scenarios dl-mix,mixed-1:2:4,interactive+2048,many-sync,sync-1:2:4,alone-train,alone-interactive \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->|refused|done$' $O/f.txt | cut -c1-150 | head -32
cd ../..
tar czf $OUT/o221.tgz -C /tmp o221
echo "end $(date +%T)"
