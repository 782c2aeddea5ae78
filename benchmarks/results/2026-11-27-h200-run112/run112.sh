#!/bin/bash
# twenty-fourth session, run 112: the unseen_loops.py programs run 111 did not reach in its 200 s, against local CuPy.
# Before: a clean export of HEAD into .gpu/clean; run(command="bash .gpu/run112.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
mkdir -p /tmp/o112
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 280 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json /tmp/o112/u.json \
  --programs large_array_loop,noncontig_inputs_rotating,negative_stride_carried,view_or_copy_carried,reduction_axis_cycle,arg_reads_feed_back,scans_and_joins,take_put_negative_indices,linalg_in_loop,fft_in_loop,fft_float32,variable_result_counts,nested_loops_sharing,generator_loop,comprehension_loop,while_converge_counts,several_reads_per_iteration,ellipsis_write_alias,errors_mid_body,failing_op_in_held_body,warnings_recorded,warnings_as_errors,warning_line_numbers,astype_copy_false_alias,copy_vs_asarray,out_into_views,int64_edge_scalars,nan_inf_zero_scalars,cycling_scalar_params,ping_pong_inputs,frees_pattern_changes,hot_sync_long,carried_long,carried_long_with_gaps,run_twice_with_gc,input_written_by_other_stretch,body_tail_changes,same_read_twice,uint8_negative_comparisons,integer_negative_power,einsum_and_products,reductions_with_out_and_dtype,fill_and_full_changing,sort_variants,complex_scalars_into_real,bool_setitem_and_mask_ops,bool_vs_int_params,host_index_arrays_mutated,long_body_many_handles,ahead_dtype_zoo,ahead_in_place_strided,ahead_last_iteration_changes,ahead_downloads,ahead_empty_and_zero_d,ahead_nan_signs,edge_float_params,metadata_of_views,param_overflow_warnings,lane_keeps_every_result,lane_drops_irregularly,lane_input_from_before_written,lane_float_steps_exact,lane_float_steps_inexact,lane_float_steps_through_zero,lane_two_floats_step,lane_float_step_overflows_float16,no_sync_dtype_zoo,no_sync_warning_counts,no_sync_views_rotating,repro_warning_line_in_replay,repro_lane_warning_leaks,repro_param_cast_warning_lost,repro_lane_stepping_float > /tmp/o112/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o112/u.txt; grep -c "n=" /tmp/o112/u.txt; grep "=NO" /tmp/o112/u.txt; grep -c Traceback /tmp/o112/u.txt
tar czf $OUT/o112.tgz -C /tmp o112
echo "end $(date +%T)"
