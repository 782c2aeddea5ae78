#!/bin/bash
# forty-first session, run 243 (issue 50): stretches taking turns served in the steady lane, now pushed
# (a loop that reads its loss and its accuracy each step), a follower's parameters guessed;
# their replies pushed ahead, an early turn told to go whole.
# The GPU tests of the lane's turns, run ahead of followers, the lane, run ahead, pushes,
# draws ahead and stretch replay against local CuPy; loss_and_accuracy and its neighbours
# against the session's first tree (7a809dd, "old": the new benchmark scripts over its
# library), calls old new new old; replay_sync.py's new two_reads and three_reads loops, the
# same way; the worker's phases of loss_and_accuracy, old and new.
#   run(command="bash .gpu/run243.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o243; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_run_ahead_turns.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_draws_ahead.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_lane_reads.py tests/gpu_backend/test_deferred_reads.py \
  tests/kernelproxy/test_early_replay.py tests/kernelproxy/test_stretch_fast_path.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
P=loss_and_accuracy,sgd_minibatch,mlp_training,logistic_regression,lr_decay
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops two_reads,three_reads,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(two|three|hot)|raw round" $O/r-$i-$tree.txt | cut -c1-100)
done
for tree in new old; do
  (cd .gpu/$tree && echo "phases $tree $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/program_phases.py --rounds 3 --devices 0 \
     --programs loss_and_accuracy,sgd_minibatch --json $O/ph-$tree.json > $O/ph-$tree.txt 2>&1; echo "rc $?"; grep -v '^ ' $O/ph-$tree.txt | head -3 | cut -c1-260
   grep "lane_armed" $O/ph-$tree.txt | cut -c1-300)
done
tar czf $OUT/o243.tgz -C /tmp o243
echo "end $(date +%T)"
