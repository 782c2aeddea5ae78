#!/bin/bash
# forty-second session, run 252 (issue 50): the float guess's long run first, a drawing
# writing step no longer committed ahead, and the lane's answers resetting the generic run
# ahead's misses in a row (RunAhead.hit), against the session's first tree (bc062ed, "old":
# the new benchmark scripts over its library), calls old new new old; the GPU tests of the
# lane, pushes, run ahead and float guess; the random walk's phases at the new tree.
#   run(command="bash .gpu/run252.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o252; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "tests rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_run_ahead_turns.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
P=random_walk,monte_carlo_pi,langevin_annealed,mc_option,heat2d_2048,lr_decay,ista_continuation,hot_sync,chain20,loss_and_accuracy
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
for p in random_walk; do
  (cd .gpu/new && echo "phases $p $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 24 \
     --programs $p --json $O/ph-$p.json > $O/ph-$p.txt 2>&1; echo "rc $?"; sed -n 2,3p $O/ph-$p.txt | cut -c1-700)
done
tar czf $OUT/o252.tgz -C /tmp o252
echo "end $(date +%T)"
