#!/bin/bash
# thirty-first session, run 158 (issue 50): matrix products made inside a held stretch's
# graphs (b0c88a9) against the tree before (53a334d, spins yielding, products eager).
# The GPU tests of products, replay, the lane and pushes against local CuPy; replay_sync's
# product loops and programs.py's product programs, old new new old; the unseen-loop
# campaigns on the new tree against local CuPy.
#   run(command="bash .gpu/run158.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o158; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/old/REV) $(cat .gpu/new/REV) $(date +%T)"
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_captured_products.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_run_ahead_turns.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
SCRIPT=$PWD/.gpu/new/benchmarks/replay_sync.py
PROGS=logistic_regression,mlp_training,conjugate_gradient,kmeans,sgd_minibatch,loss_and_accuracy,chain20,hot_sync
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops product_sync,regression_step,power_iteration,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(product|regress|power|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p-$i-$tree.txt | cut -c1-100
done
cd .gpu/new; export PYTHONPATH=/tmp/site:$PWD
for part in unseen_loop_bodies unseen_loop_bodies_more; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
cd ../..
tar czf $OUT/o158.tgz -C /tmp o158
echo "end $(date +%T)"
