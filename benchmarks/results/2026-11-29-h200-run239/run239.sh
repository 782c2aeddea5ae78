#!/bin/bash
# fortieth session, run 239 (issue 50): the session's last tree. The GPU tests of the lane,
# pushes, run ahead, draws, the float's guess and its relations against local CuPy, and the
# swap and share tests (a swap-out now rolls back a writing step committed ahead); the new
# loops of replay_sync.py (decay_step, anneal_step: a harmonic step size and its root) and
# the hot sync against the session's first tree (0650c74, "old": the new benchmark scripts
# over its library), calls old new new old; the worker's phases of ISTA, lr_decay and
# langevin_annealed; the standing: every program and replay_sync.py.
#   run(command="bash .gpu/run239.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o239; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 210 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_float_relations.py \
  tests/gpu_backend/test_worker_links.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300
 GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_swap.py tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_share_round_trips.py > $O/s.txt 2>&1
 echo "swap/share tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/s.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops decay_step,anneal_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(decay|anneal|hot)" $O/r-$i-$tree.txt | cut -c1-100)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/program_phases.py --rounds 3 --devices 0 \
   --programs ista_continuation,lr_decay,langevin_annealed --json $O/ph.json > $O/ph.txt 2>&1; echo "rc $?"; grep -v '^ ' $O/ph.txt | head -5 | cut -c1-220)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 160 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
 PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc,ipc-noearly --json $O/r.json > $O/r.txt 2>&1
 echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -20 | cut -c1-130)
tar czf $OUT/o239.tgz -C /tmp o239
echo "end $(date +%T)"
