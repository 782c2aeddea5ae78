#!/bin/bash
# thirty-fourth session, run 186 (issue 50): the review's mends (a moving view whose sliced
# array is written after it re-runs its records; a result of operands whose shapes their values
# decided is not predicted) and kernel definitions of the same contents sharing one token. The
# new tests, the fused-program, fast-path and stretch-replay tests against local CuPy; the
# moving-slices and second campaigns bitwise against local CuPy; the tree before the session
# (9c65090, given the new programs' files) against the new in alternating calls (old new new
# old) for fused_loop (its functions made at each call) and programs the template change touches.
#   run(command="bash .gpu/run186.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o186; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_moving_views.py tests/kernelproxy/test_fuse_programs.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_moving_slices import PROGRAMS as A; from unseen_loop_bodies_more import PROGRAMS as B; print(','.join(list(A)+list(B)))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
cd ../..
P=fused_loop,kmeans,bootstrap_rng,black_scholes,mlp_training,sgd_slices
unset PYTHONPATH
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110; grep -E "replays of held" $O/p-$i-$tree.txt | cut -c1-200
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o186.tgz -C /tmp o186
echo "end $(date +%T)"
