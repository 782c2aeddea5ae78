#!/bin/bash
# thirtieth session, run 148 (issue 50): kept views made again on what a replay hands out
# (worker/kept_views.py): run 147 found a loop reading ``float(v[0])`` never served by graphs
# on a GPU (CuPy's element is a 0-d view of v; the NumPy device's was a copy), power
# iteration 5-6x local with 1 % of its iterations replayed. Two clean exports: .gpu/clean
# (this tree) and .gpu/prev (4ed0d6c, the tree before). GPU tests of replay, the lane, pushed
# replies and the element's fidelity against local CuPy on this tree; replay_sync.py (this
# tree's script, each tree's library) prev clean clean prev; programs.py on this tree; the
# three unseen-loop campaigns against local CuPy on this tree (many read an element).
#   run(command="bash .gpu/run148.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o148; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_pushed_mixed.py tests/kernelproxy/test_ndarray_fidelity.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
SCRIPT=$PWD/.gpu/clean/benchmarks/replay_sync.py
LOOPS=power_iteration,product_sync,walk_step,hot_sync
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops $LOOPS --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(power|product|walk|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
done
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
  --json $O/p-clean.json > $O/p-clean.txt 2>&1)
echo "programs clean rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: " $O/p-clean.txt | cut -c1-100
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
for part in unseen_loop_bodies unseen_loop_bodies_more unseen_loop_bodies_draws; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
cd ../..
tar czf $OUT/o148.tgz -C /tmp o148
echo "end $(date +%T)"
