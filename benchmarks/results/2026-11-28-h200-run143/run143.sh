#!/bin/bash
# twenty-eighth session, run 143 (issue 50): pushed replies over early ones, in the loop they
# are for — replay_sync.py's sync_4ops (y = x * w + 0.25; float((y * y).sum()): long enough to
# go early) beside the hot sync, sides ipc (the default: sent whole once the lane says it
# would push) and ipc-earlyfirst (GPUWB_LANE_OVER_EARLY=0: early as before), three calls each
# order, 5 000 iterations.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run143.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o143; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2 3; do
  for order in "ipc,ipc-earlyfirst" "ipc-earlyfirst,ipc"; do
    timeout 90 python3 benchmarks/replay_sync.py --reps 5000 --own-pools --transports $order --loops hot_sync,sync_4ops \
      --devices 0 --policy share --json $O/r-$i-$order.json > $O/r.txt 2>&1
    echo "replay_sync $order rc $?"; grep -E "^(hot_sync|sync_4ops|raw)" $O/r.txt | cut -c1-200
  done
done
tar czf $OUT/o143.tgz -C /tmp o143
echo "end $(date +%T)"
