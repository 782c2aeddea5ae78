#!/bin/bash
# forty-ninth session, run 299 (issue 50): the assignment's index as a stretch parameter
# (7672fc7, VM only until now) on a GPU. Its GPU tests and those of the rules near it against
# local CuPy; the eleventh unseen campaign (loops that record each step by index) bit for bit
# against local CuPy, then timed against the tree before the change (5af4811, "old"), calls
# old new new old.
#   run(command="bash .gpu/run299.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o299; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_moving_views.py tests/kernelproxy/test_call_scalars_as_params.py \
  tests/gpu_backend/test_user_kernels_ahead.py tests/gpu_backend/test_user_kernel_rules.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
P=losses_kept_read_at_the_end,trajectory_rows,history_columns,ring_buffer_by_modulo,slot_added_to_in_place,flags_from_a_comparison,window_written_by_a_moving_slice,large_history_rows,numpy_int_index,filled_from_the_end,entry_reads_the_one_before,python_scalar_assigned
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $P --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $?"; grep -E " n= |programs, " $O/loops.txt | head -20)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|median" $O/u-$i-$tree.txt)
done
tar czf $OUT/o299.tgz -C /tmp o299
echo "end $(date +%T)"
