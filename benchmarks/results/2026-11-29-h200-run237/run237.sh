#!/bin/bash
# fortieth session, run 237 (issue 50): a writing step committed ahead only where its device
# time is >= 100 µs, and a float's relation that goes on taken first (next_floats). The GPU
# tests of the lane, pushes, run ahead and the float's guess against local CuPy; the new
# loops of replay_sync.py (decay_step: ISTA's decaying threshold; heat_step: a 2048²
# stencil written in place) with the commit on and off (sides ipc, ipc-nocommitwrites),
# two calls; those loops against the session's first tree (0650c74, "old": the new
# benchmark scripts over its library), calls old new new old; the worker's phases of ISTA,
# the stencils and lr_decay; the standing: every program.
#   run(command="bash .gpu/run237.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o237; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_worker_links.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
L=heat_step,decay_step,regression_step,stencil,hot_sync
for i in 1 2; do
  (cd .gpu/new && echo "writes call $i $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share \
     --transports ipc,ipc-nocommitwrites --loops $L --json $O/w-$i.json > $O/w-$i.txt 2>&1; echo "rc $?"
   grep -E "^(heat|decay|regression|stencil|hot)" $O/w-$i.txt | cut -c1-150)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops decay_step,heat_step,time_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(decay|heat|time|hot)" $O/r-$i-$tree.txt | cut -c1-100)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/program_phases.py --rounds 3 --devices 0 \
   --programs ista_continuation,heat2d_2048,heat2d,lr_decay,hot_sync --json $O/ph.json > $O/ph.txt 2>&1; echo "rc $?"; grep -v '^ ' $O/ph.txt | head -7 | cut -c1-220)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 160 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110)
tar czf $OUT/o237.tgz -C /tmp o237
echo "end $(date +%T)"
