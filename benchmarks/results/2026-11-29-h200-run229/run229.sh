#!/bin/bash
# thirty-ninth session, run 229 (issue 50): the standing at the session's end. The GPU tests
# of stretch replay, the lane and its reads, pushes, run ahead, draws, the fast path and the
# graph API against local CuPy; the long run of a float's guess (a model right at each of
# the last 12 steps) against the tree before it (0329560, run 228's), calls mid new new mid:
# replay_sync.py's time_step and walk_step, programs.py's stepping loops; then the standing:
# programs.py (every program, one call) and replay_sync.py.
#   run(command="bash .gpu/run229.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o229; mkdir -p $O
for tree in mid new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 230 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_worker_links.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
P=random_walk,langevin_annealed,ista_continuation,hot_sync
i=0
for tree in mid new new mid; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops time_step,walk_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(time|walk)_step" $O/r-$i-$tree.txt | cut -c1-120
   PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
 PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
 echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -16 | cut -c1-150)
tar czf $OUT/o229.tgz -C /tmp o229
echo "end $(date +%T)"
