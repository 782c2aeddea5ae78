#!/bin/bash
# thirty-fourth session, run 188 (issue 50): the steady lane serves loops whose int parameters
# step (a slice's bounds moving by the batch). The steady-lane, moving-slices, run-ahead and
# stretch-replay tests against local CuPy; the moving-slices and second campaigns (its lane_*
# loops) bitwise; the run-187 tree (8bf7b44) against the new in alternating calls for the
# slicing programs and replay_sync's loops.
#   run(command="bash .gpu/run188.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o188; mkdir -p $O
for tree in mid new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_moving_slices import PROGRAMS as A; from unseen_loop_bodies_more import PROGRAMS as B; print(','.join(list(A)+[n for n in B if n.startswith(('lane', 'ahead', 'no_sync'))]))")
timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
grep -E "^(minibatch_sgd_in_order|batch_kept_into|sliding_window|rows_by|negative_bounds|numpy_int) " $O/u.txt | cut -c1-130
cd ../..
unset PYTHONPATH
P=sgd_slices,stencil,chain20,hot_sync
i=0
for tree in mid new new mid; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s[k] for k in ('ahead','lane','pushed','push_confirmed')}); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o188.tgz -C /tmp o188
echo "end $(date +%T)"
