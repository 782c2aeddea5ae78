#!/bin/bash
# twenty-eighth session, run 144 (issue 50): the steady lane takes steps that write (their own
# results, or their inputs in place: pushed, committed when their message comes). Two clean
# exports: .gpu/clean (this tree) and .gpu/prev (the tree before the change); programs.py
# --rounds 3 --own-pools on the side ipc for each, the trees' order given by $1 (ab: before
# first; ba: this tree first); with ab, the GPU tests of the lane and pushed replies against
# local CuPy first; with ba, the three unseen-loop campaigns against local CuPy after.
# Before: clean exports of HEAD (.gpu/clean) and of the tree before (.gpu/prev), each with
# REV, docs and benchmarks/results left out;
#   run(command="bash .gpu/run144.sh ab", carry=[".whl", ".gpu"])
set -u
ORDER=${1:-ab}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o144$ORDER; mkdir -p $O
ROOT=$PWD
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
PROGS=hot_sync,chain20,stencil,heat2d,heat2d_2048,logistic_regression,nbody,kmeans,conjugate_gradient,loss_and_accuracy
if [ "$ORDER" = ab ]; then
  (cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
    tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead_alone.py > $O/t.txt 2>&1)
  echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
  TREES="prev clean"
else
  TREES="clean prev"
fi
for tree in $TREES; do
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$tree.json > $O/p-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/p-$tree.txt | cut -c1-120 | head -16
done
if [ "$ORDER" = ba ]; then
  cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
  for part in unseen_loop_bodies unseen_loop_bodies_more unseen_loop_bodies_draws; do
    NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
    timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
    echo "$part rc $?"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
  done
  cd $ROOT
fi
tar czf $OUT/o144$ORDER.tgz -C /tmp o144$ORDER
echo "end $(date +%T)"
