#!/bin/bash
# forty-third session, run 261 (issue 50): the steady lane serves a step whose stretch
# uploads (run when its message comes). The GPU tests of held uploads, the lane, its turns,
# pushes, run ahead, deferred reads, the fast path and stretch replay against local CuPy;
# replay_sync.py's minibatch_step and feed_step, sides ipc and ipc-nolane (the lane off) in
# pools of their own, against the session's first tree (4482843, "old"), six calls
# alternating; sgd_minibatch and mlp_training old new new old; program_phases.py over both;
# then the standing: every program, one call.
#   run(command="bash .gpu/run261.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o261; mkdir -p $O
for tree in new old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 220 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_lane_turns.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_deferred_reads.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_lane_reads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old old new; do
  i=$((i+1))
  sides=ipc; [ $tree = new ] && sides=ipc,ipc-nolane
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports $sides --loops minibatch_step,feed_step \
     --json $O/rs-$i-$tree.json > $O/rs-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(minibatch_step|feed_step)" $O/rs-$i-$tree.txt | cut -c1-150)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "programs $i $tree $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 75 python3 benchmarks/programs.py --rounds 7 --own-pools --transports ipc --devices 0 --programs sgd_minibatch,mlp_training \
     --json $O/ab-$i-$tree.json > $O/ab-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/ab-$i-$tree.txt | cut -c1-110)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/program_phases.py --programs sgd_minibatch,mlp_training --rounds 3 --devices 0 --json $O/ph.json > $O/ph.txt 2>&1
 echo "phases rc $?"; grep -vE "^ |^\{|^\}" $O/ph.txt | head -12 | cut -c1-260)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110)
tar czf $OUT/o261.tgz -C /tmp o261
echo "end $(date +%T)"
