#!/bin/bash
# forty-first session, run 247 (issue 50): the session's last tree — a next replay set up
# ahead forgotten once the lane runs its stretch, and a ring of turns armed with the lane's
# own run ahead of the first. The GPU tests of the lane and its turns, pushes, run ahead and
# stretch replay against local CuPy; replay_sync.py's two_reads, three_reads and the hot sync,
# and loss_and_accuracy, against the session's first tree (7a809dd), calls old new new old.
#   run(command="bash .gpu/run247.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o247; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 130 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_run_ahead_turns.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 30 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops two_reads,three_reads,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(two|three|hot)|raw round" $O/r-$i-$tree.txt | cut -c1-100
   PYTHONPATH=/tmp/site:$PWD timeout 25 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs loss_and_accuracy \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o247.tgz -C /tmp o247
echo "end $(date +%T)"
