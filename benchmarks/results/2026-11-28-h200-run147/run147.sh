#!/bin/bash
# thirtieth session, run 147 (issue 50): the steady lane running a step's products and draws
# (twenty-ninth session, not yet measured on a GPU). Two clean exports: .gpu/clean (this tree)
# and .gpu/prev (ff9c13e, the tree before that work). The lane's and pushed replies' GPU tests
# against local CuPy on this tree; replay_sync.py (this tree's script, each tree's library) on
# the loops with products and draws, prev clean clean prev, replay on with and without the lane;
# programs.py over every program on this tree.
#   run(command="bash .gpu/run147.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o147; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_pushed_mixed.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
SCRIPT=$PWD/.gpu/clean/benchmarks/replay_sync.py
LOOPS=product_sync,regression_step,power_iteration,walk_step,pi_step,hot_sync
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc,ipc-nolane \
    --loops $LOOPS --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -vE "^\s*$" $O/r-$i-$tree.txt | tail -16 | cut -c1-140
done
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD timeout 220 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
  --json $O/p-clean.json > $O/p-clean.txt 2>&1)
echo "programs clean rc $? $(date +%T)"; grep -vE "^\s*$" $O/p-clean.txt | tail -30 | cut -c1-130
tar czf $OUT/o147.tgz -C /tmp o147
echo "end $(date +%T)"
