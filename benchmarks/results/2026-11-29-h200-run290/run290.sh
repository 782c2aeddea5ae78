#!/bin/bash
# forty-seventh session, run 290 (issue 50): the session's last code for calls of several
# results (a held stretch ended before such a call, the container learnt from the pool's
# first answer, refusals told by known metadata left to the waiting path, at most 4 batches
# unanswered after the call's cuts, linalg's structures): its GPU tests against local CuPy;
# the unseen loops that make such calls and masked_step against the session's first tree
# (5060fba, "old"), calls old new new old.
#   run(command="bash .gpu/run290.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o290; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 220 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_result_structures.py tests/kernelproxy/test_result_structures_edges.py tests/gpu_backend/test_aliased_inputs.py tests/kernelproxy/test_diff_shapes.py \
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
tar czf $OUT/o290.tgz -C /tmp o290
echo "end $(date +%T)"
