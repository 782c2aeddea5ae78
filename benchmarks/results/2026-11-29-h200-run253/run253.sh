#!/bin/bash
# forty-second session, run 253 (issue 50): the standing at the session's last tree. The GPU
# tests of the lane and its turns, pushes, run ahead and its turns, draws, the float's
# guess, kept views, objects gone, remote random, the fast path, the graph API and the links
# against local CuPy, and the swap and share tests; then every program (programs.py, one
# call) and replay_sync.py's loops with and without early replay; then the random walk,
# Langevin and ISTA against the session's first tree (bc062ed, "old": the new benchmark
# scripts over its library), seven rounds a call, old new new old.
#   run(command="bash .gpu/run253.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o253; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 230 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_run_ahead_turns.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_float_relations.py \
  tests/gpu_backend/test_worker_links.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300
 GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_swap.py tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_share_round_trips.py > $O/s.txt 2>&1
 echo "swap/share tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/s.txt | tail -8 | cut -c1-300)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 170 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
 PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc,ipc-noearly --json $O/r.json > $O/r.txt 2>&1
 echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -24 | cut -c1-130)
# the drawing programs against the session's first tree (bc062ed), more rounds a call
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/old && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 7 --own-pools --transports ipc --devices 0 --programs random_walk,langevin_annealed,ista_continuation \
     --json $O/ab-$i-$tree.json > $O/ab-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/ab-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o253.tgz -C /tmp o253
echo "end $(date +%T)"
