#!/bin/bash
# thirty-ninth session, run 234 (issue 50): the session's last tree on a GPU: the tests of
# stretch replay, the lane and its reads, pushes, run ahead, draws, the fast path and the
# graph API against local CuPy (run 229's set), and the share policy's GPU tests (its
# snapshot's new count; the round-trip test judged anew).
#   run(command="bash .gpu/run234.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o234; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 230 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_worker_links.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 100 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_share_round_trips.py tests/gpu_backend/test_share_policy.py > $O/s.txt 2>&1
echo "share tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/s.txt | tail -6 | cut -c1-300
cd ../..
tar czf $OUT/o234.tgz -C /tmp o234
echo "end $(date +%T)"
