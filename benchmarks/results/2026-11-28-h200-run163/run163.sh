#!/bin/bash
# thirty-second session, run 163 (issue 50): a Generator's plainest draws made inside the
# worker's graphs (worker/eager_ops.py's captured_draw). Two clean exports: .gpu/new (this
# tree) and .gpu/prev (b596bc7, the tree before). GPU tests against local CuPy on this tree;
# the Generator probe again; replay_sync.py (this tree's script) and programs.py on the drawing
# loops, prev new new prev; the two drawing unseen-loop campaigns against local CuPy.
#   run(command="bash .gpu/run163.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o163; mkdir -p $O
for tree in new prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/new/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_pushed_mixed.py tests/gpu_backend/test_captured_products.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
(cd .gpu/new && PYTHONPATH=$PWD timeout 30 python3 benchmarks/curand_capture_probe.py --generator-api --json $O/gen.json > $O/gen.txt 2>&1)
echo "generator probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/gen.txt | head -14
SCRIPT=$PWD/.gpu/new/benchmarks/replay_sync.py
PROGS=bootstrap_rng,monte_carlo_pi,chain20
i=0
for tree in prev new new prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops boot_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(boot|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p-$i-$tree.txt | cut -c1-100
done
cd .gpu/new; export PYTHONPATH=/tmp/site:$PWD
for part in unseen_loop_bodies_graphed_draws unseen_loop_bodies_draws; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 110 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
  grep -E "^[a-z_0-9]+ +n= " $O/$part.txt | cut -c1-120
done
cd ../..
tar czf $OUT/o163.tgz -C /tmp o163
echo "end $(date +%T)"
