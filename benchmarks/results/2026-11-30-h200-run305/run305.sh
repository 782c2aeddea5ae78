#!/bin/bash
# forty-ninth session, run 305 (issue 51): where many-sync loses work under share (0.943
# against none's 0.960 in run 303) and sync-1:2:4 its last points of error: the share window
# (4 ms) at 8, and the heaviest users' deep lead (16 ms: in many-sync every user is the
# heaviest) off, beside share and none in one call, one pass.
#   run(command="bash .gpu/run305.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o305; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 230 python3 benchmarks/fairness.py --policies none,share,share+window8,share+deeplead0 --calibrate none \
  --scenarios many-sync,sync-1:2:4 --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -E "^(many-sync|sync-1:2:4) " $O/f.txt | cut -c1-150
cd ../..
tar czf $OUT/o305.tgz -C /tmp o305
echo "end $(date +%T)"
