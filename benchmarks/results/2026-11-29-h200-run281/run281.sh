#!/bin/bash
# forty-sixth session, run 281 (issue 50): trailing downloads by place (another stretch's results,
# an input) and after the review's mends: the GPU tests of them (lifetimes too), downloads through
# graphs, stretch replay and malformed headers against local CuPy; then the unseen loops that
# download after a replay's closing read, timed on / off / off / on (GPUWB_PREFETCH).
#   run(command="bash .gpu/run281.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o281; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_trailing_downloads_lifetimes.py tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_downloads_streamed.py \
  tests/gpu_backend/test_downloads_replayed_corners.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_bad_stretch_input.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
P=ahead_dtype_zoo,aliases_made_by_functions,bool_vs_int_params,boolean_masks,carried_long_with_gaps,earlier_arrays_read_and_written,edge_float_params,einsum_and_products,empty_arrays,errors_mid_body,fft_in_loop,fill_and_full_changing,frees_pattern_changes,generator_loop,host_index_arrays_mutated,indices_kept_every_step,int64_edge_scalars,integer_division_by_zero,lane_drops_irregularly,lane_keeps_every_result,large_and_small_upload,mixed_precision_pairs,nan_inf_zero_scalars,numpy_scalar_params,only_views_of_results_kept,overlapping_inputs_alternating,param_overflows_its_dtype,reduction_axis_cycle,reductions_axes,reductions_with_out_and_dtype,rows_draw_written_step_fails,scalar_changes_type,scalar_kind_zoo,scans_and_joins,sort_variants,special_scalars
for t in on off off2 on2; do pf=1; case $t in off*) pf=0;; esac
 (cd .gpu/new && echo "$t $(date +%T)" && GPUWB_PREFETCH=$pf PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/$t.json > $O/$t.txt 2>&1
  echo "rc $?"; grep -A2 "^campaign" $O/$t.txt | cut -c1-100; grep -E "with problems" $O/$t.txt)
done
tar czf $OUT/o281.tgz -C /tmp o281
echo "end $(date +%T)"
