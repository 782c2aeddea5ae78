#!/bin/bash
# twenty-eighth session, run 146 (issue 50): run ahead of stretches taking turns (two reads a
# step: RunAhead.follows). Two clean exports: .gpu/clean (this tree) and .gpu/prev (the tree
# before); the GPU tests of run ahead (turns, alone, plain) and pushed replies against local
# CuPy on this tree; programs.py --rounds 3 --own-pools --transports ipc on each tree, before
# then after then before again... (prev clean clean prev); the three unseen-loop campaigns
# against local CuPy on this tree.
# Before: clean exports of HEAD (.gpu/clean) and of the tree before (.gpu/prev), each with
# REV, docs and benchmarks/results left out;
#   run(command="bash .gpu/run146.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o146; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_run_ahead_turns.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py \
  tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1)
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
PROGS=loss_and_accuracy,logistic_regression,kmeans,conjugate_gradient,mlp_training,heat2d,chain20
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -E "^(loss|logistic|kmeans|conj|mlp|heat|chain|ipc: [0-9])" $O/p-$i-$tree.txt | cut -c1-100
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
for part in unseen_loop_bodies unseen_loop_bodies_more unseen_loop_bodies_draws; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
cd ../..
tar czf $OUT/o146.tgz -C /tmp o146
echo "end $(date +%T)"
