#!/bin/bash
# twenty-seventh session, run 132 (issue 50: replies pushed ahead, gpu_backend/worker/
# pushed_replies.py): the GPU tests of pushed replies, the steady lane, run ahead and draws
# ahead against local CuPy; the hot sync with pushes on and off (GPUWB_PUSH=0, side
# ipc-nopush), each side's own pool, both orders; programs.py's synced loops both sides; the
# interactive user beside 2048^2 GEMMs with pushes on, off, and under none.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run132.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o132; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_draws_ahead.py > $O/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
for order in "ipc,ipc-nopush" "ipc-nopush,ipc"; do
  timeout 90 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports $order --loops hot_sync --devices 0 --policy share \
    --json $O/r-$order.json > $O/r-$order.txt 2>&1
  echo "replay_sync $order rc $?"; grep -E "^(loop|hot_sync|raw|target)" $O/r-$order.txt | cut -c1-250
done
timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc,ipc-nopush --devices 0 \
  --programs hot_sync,chain20,black_scholes,kmeans,conjugate_gradient,stencil --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $?"; grep -E "^(program|hot_sync|chain20|black|kmeans|conj|stencil|ipc)" $O/p.txt | cut -c1-200
timeout 150 python3 benchmarks/interactive_beside.py --devices 0 --busy gemm:2048 --requests 300 \
  --sides default,GPUWB_PUSH=0,policy=none --json $O/i.json > $O/i.txt 2>&1
echo "interactive rc $?"; grep -vE '^ |^\{|^\}' $O/i.txt | head -12
tar czf $OUT/o132.tgz -C /tmp o132
echo "end $(date +%T)"
