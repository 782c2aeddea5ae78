#!/bin/bash
# twenty-seventh session, run 134 (issue 50): where the worker's cycle goes with replies pushed
# ahead (run 133: pushed, the hot sync took what it took without): cProfiles of the client and
# the worker over the hot sync (replay_profile.py), the defaults.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run134.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o134; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 120 python3 benchmarks/replay_profile.py --loop hot_sync --reps 3000 --devices 0 --policy share --top 40 > $O/prof.txt 2>&1
echo "profile rc $?"
grep -A48 "=== worker" $O/prof.txt | head -60
tar czf $OUT/o134.tgz -C /tmp o134
echo "end $(date +%T)"
