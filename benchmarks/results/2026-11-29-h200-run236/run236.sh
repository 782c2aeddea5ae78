#!/bin/bash
# fortieth session, run 236 (issue 50): a step that writes its inputs committed ahead (its
# inputs' values kept aside for a roll-back) and a decay / a float made from another guessed
# (lam *= 0.98, lr * lam). The GPU tests of the lane, pushes, run ahead and the float's
# guess against local CuPy (run 234's set); programs.py's writing loops with the commit on
# and off (sides ipc, ipc-nocommitwrites, one pool each), two calls; ISTA and the new
# lr_decay against the session's first tree (0650c74, "old": the new benchmark scripts over
# its library), calls old new new old; the standing: every program and replay_sync.py.
#   run(command="bash .gpu/run236.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o236; mkdir -p $O
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
W=heat2d,heat2d_2048,logistic_regression,lr_decay,stencil
for i in 1 2; do
  (cd .gpu/new && echo "writes call $i $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc,ipc-nocommitwrites --devices 0 --programs $W \
     --json $O/w-$i.json > $O/w-$i.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/w-$i.txt | cut -c1-130)
done
P=ista_continuation,lr_decay,heat2d_2048,langevin_annealed
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 160 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
 PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
 echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -16 | cut -c1-150)
tar czf $OUT/o236.tgz -C /tmp o236
echo "end $(date +%T)"
