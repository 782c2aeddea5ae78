#!/bin/bash
# twenty-seventh session, run 135 (issue 50: replies pushed ahead and their messages committed ahead
# (GPUWB_PUSH_AHEAD), the lane not giving way to a message waiting): the hot sync with pushes on, pushes
# without commits ahead (side ipc-nocommit) and pushes off (side
# ipc-nopush), each side's own pool, four calls alternating the order; programs.py's synced
# loops both sides; the interactive user beside 2048^2 GEMMs with pushes on, off, and under
# none; the GPU tests of pushed replies and the steady lane against local CuPy.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run135.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o135; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for order in "ipc,ipc-nocommit,ipc-nopush" "ipc-nopush,ipc-nocommit,ipc" "ipc,ipc-nocommit,ipc-nopush" "ipc-nopush,ipc-nocommit,ipc"; do
  timeout 120 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports $order --loops hot_sync --devices 0 --policy share \
    --json $O/r-$order-$SECONDS.json > $O/r.txt 2>&1
  echo "replay_sync $order rc $?"; grep -E "^(hot_sync|raw)" $O/r.txt | cut -c1-260
done
timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc,ipc-nopush --devices 0 \
  --programs hot_sync,chain20,black_scholes,kmeans,conjugate_gradient,stencil --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $?"; grep -E "^(hot_sync|chain20|black|kmeans|conj|stencil|ipc)" $O/p.txt | cut -c1-200
timeout 150 python3 benchmarks/interactive_beside.py --devices 0 --busy gemm:2048 --requests 300 \
  --sides default,GPUWB_PUSH=0,policy=none --json $O/i.json > $O/i.txt 2>&1
echo "interactive rc $?"; grep -vE '^ |^\{|^\}' $O/i.txt | head -6
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead_alone.py > $O/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
tar czf $OUT/o135.tgz -C /tmp o135
echo "end $(date +%T)"
