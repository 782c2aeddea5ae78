#!/bin/bash
# forty-eighth session, run 295 (issue 50): a user kernel's NumPy scalars made stretch
# parameters (a RawKernel given the time each step held). Its GPU tests against local CuPy;
# the tenth campaign and the loops with kernels bit for bit against local CuPy and timed
# against the session's first tree (144925e, "old"), calls old new new old; then the
# standing of the curated programs at this tree (programs.py, one call).
#   run(command="bash .gpu/run295.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o295; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_user_kernels_ahead.py tests/gpu_backend/test_user_kernel_rules.py tests/gpu_backend/test_stretch_replay.py \
  tests/gpu_backend/test_run_ahead.py tests/kernelproxy/test_custom_kernels.py tests/kernelproxy/test_jit_rawkernel.py \
  tests/kernelproxy/test_jit_vectorize.py tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_call_scalars_as_params.py \
  tests/kernelproxy/test_stretch_key.py tests/kernelproxy/test_stretch_fast_path.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
P=raw_axpy_in_place,raw_heat_ping_pong,leapfrog_outputs_given,elementwise_returning_step,reduction_kernel_norm_read,raw_module_two_functions,raw_kernel_on_a_fresh_copy,raw_kernel_through_a_view,raw_kernel_time_argument,kernel_every_other_step,raw_kernel_no_read_loop,atomic_histogram_each_step,user_kernels_in_loop,draws_cupy_kernels,fused_functions
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $P --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $?"; grep -E "programs, |no replay" $O/loops.txt | head -20)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$tree.txt)
done
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 125 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110)
tar czf $OUT/o295.tgz -C /tmp o295
echo "end $(date +%T)"
