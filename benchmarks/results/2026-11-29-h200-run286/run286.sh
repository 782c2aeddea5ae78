#!/bin/bash
# forty-seventh session, run 286 (issue 50): calls of several results whose structure the
# arguments tell issued with no wait (want `t`, kernelproxy/result_structures.py), and
# where(c, x, y), unique(x), indices, gradient on one axis issued as one array. The GPU tests
# of the change and of the suites around it against local CuPy; the unseen loops that call
# such functions timed against the session's first tree (5060fba, "old": the new benchmark
# scripts over its library), calls old new new old; replay_sync.py's logged_step (trailing
# downloads, last session's, not yet GPU-measured) with GPUWB_PREFETCH on and off; the new
# masked_step (where(c, x, y) and split) old new new old.
#   run(command="bash .gpu/run286.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o286; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 220 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_result_structures.py tests/gpu_backend/test_aliased_inputs.py tests/kernelproxy/test_diff_shapes.py \
  tests/kernelproxy/test_diff_ufuncs_reductions.py tests/kernelproxy/test_newcomer_fidelity.py tests/kernelproxy/test_stretch_fast_path.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_never_graphed.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
P=sort_variants,astype_cumsum_sort,tuple_results,aliases_made_by_functions,multi_result_functions,split_pieces_written,view_functions_written,out_forms,repro_split_piece_written,where_and_nonzero,nan_inf_zero_scalars,reductions_axes
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$tree.txt
   PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops masked_step,sync_4ops --json $O/m-$i-$tree.json > $O/m-$i-$tree.txt 2>&1; echo "rc $?"; grep -E "^(masked|sync)" $O/m-$i-$tree.txt | cut -c1-120)
done
for t in on off off2 on2; do pf=1; case $t in off*) pf=0;; esac
 (cd .gpu/new && echo "logged_step $t $(date +%T)" && GPUWB_PREFETCH=$pf PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
    --loops logged_step,two_reads --json $O/l-$t.json > $O/l-$t.txt 2>&1; echo "rc $?"
  grep -E "^(logged|two)" $O/l-$t.txt | cut -c1-150)
done
tar czf $OUT/o286.tgz -C /tmp o286
echo "end $(date +%T)"
