#!/bin/bash
# fortieth session, run 240 (issue 50): the session's last tree (a commit ahead rolled back
# uncounted from the answers; a harmonic pair tried only on positive values): the GPU tests
# of the lane, pushes, run ahead, draws, the float's guess and its relations against local
# CuPy, and the swap and share tests; replay_sync.py's hot sync, decay_step and anneal_step.
#   run(command="bash .gpu/run240.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o240; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 210 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_float_relations.py \
  tests/gpu_backend/test_worker_links.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_swap.py tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_share_round_trips.py > $O/s.txt 2>&1
echo "swap/share tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/s.txt | tail -8 | cut -c1-300
timeout 60 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
  --loops hot_sync,decay_step,anneal_step --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -8 | cut -c1-110
cd ../..
tar czf $OUT/o240.tgz -C /tmp o240
echo "end $(date +%T)"
