#!/bin/bash
# forty-eighth session, run 297 (issue 50): a parameter that is the value the replay before
# read (power iteration's norm fed back) taken for the run ahead. Its GPU tests against local
# CuPy; replay_sync.py's new norm_fed_step and power_iteration against the session's first
# tree (144925e), calls old new new old; the unseen loops that read a value and use it next,
# the same way.
#   run(command="bash .gpu/run297.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o297; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_user_kernels_ahead.py tests/gpu_backend/test_lane_turns.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
P=linalg_in_loop,orthogonal_iteration,arg_reads_feed_back,branch_on_value,scalar_reads,reduction_kernel_norm_read
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops norm_fed_step,power_iteration,hot_sync --json $O/m-$i-$tree.json > $O/m-$i-$tree.txt 2>&1; echo "rc $?"; grep -E "^(norm|power|hot)" $O/m-$i-$tree.txt | cut -c1-120
   PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$tree.txt)
done
tar czf $OUT/o297.tgz -C /tmp o297
echo "end $(date +%T)"
