#!/bin/bash
# forty-eighth session, run 294 (issue 50): after run 293 and a review, a user's kernels
# captured and run ahead (a kernel given addresses re-runs its records), writes into a
# ufunc's or a creation's result taken as the stretch's own, buffers that take turns run
# ahead, a run ahead matched on the inputs its ops read. Its GPU tests against local CuPy;
# the tenth unseen campaign and the loops with kernels bit for bit against local CuPy, then
# timed against the session's first tree (144925e, "old"), calls old new new old; then every
# unseen loop bit for bit against local CuPy (unseen_loops.py --local cupy).
#   run(command="bash .gpu/run294.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o294; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 230 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_user_kernels_ahead.py tests/gpu_backend/test_user_kernel_rules.py tests/gpu_backend/test_stretch_replay.py \
  tests/gpu_backend/test_run_ahead.py tests/kernelproxy/test_custom_kernels.py tests/kernelproxy/test_jit_rawkernel.py \
  tests/kernelproxy/test_jit_vectorize.py tests/kernelproxy/test_fuse_programs.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_aliased_inputs.py tests/gpu_backend/test_moving_views.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steps_overlapped.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
P=raw_axpy_in_place,raw_heat_ping_pong,leapfrog_outputs_given,elementwise_returning_step,reduction_kernel_norm_read,raw_module_two_functions,raw_kernel_on_a_fresh_copy,raw_kernel_through_a_view,raw_kernel_time_argument,kernel_every_other_step,raw_kernel_no_read_loop,atomic_histogram_each_step,user_kernels_in_loop,draws_cupy_kernels,fused_functions
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $P --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $?"; grep -E "programs, |no replay" $O/loops.txt | head -20)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$tree.txt)
done
(cd .gpu/new && echo "all loops $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 280 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json $O/all.json > $O/all.txt 2>&1
 echo "rc $?"; grep -E "programs, |no replay" $O/all.txt | cut -c1-400)
tar czf $OUT/o294.tgz -C /tmp o294
echo "end $(date +%T)"
