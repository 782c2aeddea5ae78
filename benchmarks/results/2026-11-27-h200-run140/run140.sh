#!/bin/bash
# twenty-seventh session, run 140 (issue 50, the session's end state: replies pushed and committed ahead, the lane no longer leaving for a
# message already waiting): the worker's
# phases of the hot sync with pushes committed ahead, pushed only, and off (worker_phases.py);
# the hot sync A/B, pushes on and off, six calls alternating the order, 5 000 iterations each;
# synced programs of programs.py on both sides; the interactive user beside 2048^2 GEMMs;
# the GPU tests of pushed replies and the lane.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run140.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o140; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py > $O/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
timeout 120 python3 benchmarks/worker_phases.py --loops hot_sync --sides fast,nocommit,nopush --reps 3000 --policy share \
  --devices 0 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $?"; grep -vE '^ |^\{|^\}' $O/w.txt | head -6
for i in 1 2 3; do
  for order in "ipc,ipc-nopush" "ipc-nopush,ipc"; do
    timeout 90 python3 benchmarks/replay_sync.py --reps 5000 --own-pools --transports $order --loops hot_sync --devices 0 --policy share \
      --json $O/r-$i-$order.json > $O/r.txt 2>&1
    echo "replay_sync $order rc $?"; grep -E "^(hot_sync|raw)" $O/r.txt | cut -c1-200
  done
done
timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc,ipc-nopush --devices 0 \
  --programs hot_sync,chain20,black_scholes,kmeans,conjugate_gradient,stencil,heat2d --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $?"; grep -vE '^ |^\{|^\}' $O/p.txt | cut -c1-200 | head -30
timeout 150 python3 benchmarks/interactive_beside.py --devices 0 --busy gemm:2048 --requests 300 \
  --sides default,GPUWB_PUSH=0,policy=none --json $O/i.json > $O/i.txt 2>&1
echo "interactive rc $?"; grep -vE '^ |^\{|^\}' $O/i.txt | head -6
tar czf $OUT/o140.tgz -C /tmp o140
echo "end $(date +%T)"
