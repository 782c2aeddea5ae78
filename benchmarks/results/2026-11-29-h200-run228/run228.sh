#!/bin/bash
# thirty-ninth session, run 228 (issue 50): the read graph made on a GPU (run 227's failed to
# be made: an attribute set on CuPy's Graph): the lane's GPU tests with its reads, then the
# new tree against the session's start (066354b), calls old new new old: programs.py's read
# loops, replay_sync.py; the new tree's worker phases.
#   run(command="bash .gpu/run228.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o228; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_lane_reads.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_deferred_reads.py tests/kernelproxy/test_objects_gone.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
P=hot_sync,chain20,random_walk,conjugate_gradient,monte_carlo_pi_rng
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,sync_4ops,time_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -vE "^ |^\{|^\}|^-|^loop" $O/r-$i-$tree.txt | head -5 | cut -c1-120)
done
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/program_phases.py --devices 0 --rounds 3 --programs hot_sync,chain20 --top 22 --json $O/w.json > $O/w.txt 2>&1
 echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | grep -v "the last run" | cut -c1-600; grep -o '"lane_slot_reads": [0-9]*' $O/w.json)
tar czf $OUT/o228.tgz -C /tmp o228
echo "end $(date +%T)"
