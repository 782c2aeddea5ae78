#!/bin/bash
# thirty-seventh session, run 216 (issue 50): a swap-out collecting reference cycles (run 215 found
# them holding the three memory tests' leftovers); the GPU tests
# of stretch replay, the lane, run ahead, pushed and deferred replies, swap, transfers.
#   run(command="bash .gpu/run216.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o216; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 300 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_moving_views.py \
  tests/gpu_backend/test_deferred_reads.py tests/gpu_backend/test_swap.py tests/kernelproxy/test_objects_gone.py \
  tests/kernelproxy/test_transfers.py tests/kernelproxy/test_moving_slices.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_stretch_fast_path.py \
  tests/kernelproxy/test_call_scalars_as_params.py tests/kernelproxy/test_graph_api.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-600
cd ../..
tar czf $OUT/o216.tgz -C /tmp o216
echo "end $(date +%T)"
