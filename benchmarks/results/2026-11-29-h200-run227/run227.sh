#!/bin/bash
# thirty-ninth session, run 227 (issue 50): the session's three changes on a GPU — a float's
# guess at once (1eb9f60), a peer found readable read without polling again, the lane's
# closing scalar reads by one read graph (lane_reads.py) — first the GPU tests of the lane, its
# reads, pushes, run ahead and draws against local CuPy, then the new tree against the
# session's start (066354b) in alternating calls old new new old: programs.py's read loops,
# replay_sync.py; the new tree's worker phases.
#   run(command="bash .gpu/run227.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o227; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 170 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_lane_reads.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_deferred_reads.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_draws_ahead.py \
  tests/gpu_backend/test_lane_measures.py tests/kernelproxy/test_objects_gone.py tests/gpu_backend/test_stretch_replay.py \
  tests/gpu_backend/test_worker_links.py tests/gpu_backend/test_float_steps.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
P=hot_sync,chain20,random_walk,conjugate_gradient,kmeans,monte_carlo_pi_rng,logistic_regression
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,sync_4ops,power_iteration,time_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -vE "^ |^\{|^\}|^-|^loop" $O/r-$i-$tree.txt | head -7 | cut -c1-120)
done
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/program_phases.py --devices 0 --rounds 3 --programs hot_sync,chain20 --top 22 --json $O/w.json > $O/w.txt 2>&1
 echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | grep -v "the last run" | cut -c1-600)
tar czf $OUT/o227.tgz -C /tmp o227
echo "end $(date +%T)"
