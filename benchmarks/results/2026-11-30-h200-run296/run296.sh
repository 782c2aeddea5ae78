#!/bin/bash
# forty-eighth session, run 296 (issue 50): the session's last code (user kernels captured
# and run ahead, their NumPy scalars parameters, fresh results, ping-pong, a narrow float's
# guess). Its GPU tests against local CuPy; the unseen loops run 294's call did not reach,
# bit for bit against local CuPy; the curated programs against the session's first tree
# (144925e), calls old new new old: what the broader rules cost or give them.
#   run(command="bash .gpu/run296.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o296; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_user_kernels_ahead.py tests/gpu_backend/test_user_kernel_rules.py tests/gpu_backend/test_stretch_replay.py \
  tests/gpu_backend/test_run_ahead.py tests/kernelproxy/test_custom_kernels.py tests/kernelproxy/test_call_scalars_as_params.py \
  tests/kernelproxy/test_stretch_key.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_moving_views.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
(cd .gpu/new && echo "rest loops $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 170 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs graphed_step_that_fails,decay_in_place,relu_floor_rises,clip_bounds_widen,zero_sign_flips,nan_floor,int_then_float_threshold,int_dtype_overflow,shifts_and_ldexp,dtype_given_to_the_call,clip_by_a_float64_array,langevin_normal,module_uniform_bounds_move,poisson_rate_grows,scale_turns_negative,generator_gamma_shape,minibatch_sgd_in_order,batch_kept_into_the_next_step,epochs_with_a_short_last_batch,sliding_window_mean,rows_by_an_int_index,write_through_the_view,column_window,strided_batches,negative_bounds_move,batch_kept_past_the_loop_then_written,image_patches,numpy_int_bounds,rows_draw_then_in_place,rows_two_draws_no_input,rows_draw_between_graphs,rows_odd_normal_count,rows_size_changes_now_and_then,rows_draw_kept_and_read,rows_eager_product_between,rows_draw_reads_an_input,rows_odd_float32_beside_even,rows_draw_then_outer,rows_draw_shuffled,rows_draw_written_and_kept,rows_draw_written_step_fails,rows_eager_returns_its_operand,minibatch_by_uploaded_indices,reading_uploaded_first,two_uploads_a_step,indices_kept_every_step,upload_written_in_place,dtype_switches_now_and_then,short_batch_each_epoch,host_buffer_refilled,boolean_mask_uploaded,zero_d_reading,numpy_number_learning_rate,large_and_small_upload,no_read_in_the_loop,leaky_relu_where_step,divmod_clock,split_into_chunks,meshgrid_field_step,unique_counts_and_histogram,orthogonal_iteration,gradient_of_a_field,modf_frexp_no_read,split_refused_then_fine,nonzero_of_a_fresh_mask,atleast_and_broadcast,long_step_with_divmod_inside,raw_axpy_in_place,raw_heat_ping_pong,leapfrog_outputs_given,elementwise_returning_step,reduction_kernel_norm_read,raw_module_two_functions,raw_kernel_on_a_fresh_copy,raw_kernel_through_a_view,raw_kernel_time_argument,kernel_every_other_step,raw_kernel_no_read_loop,atomic_histogram_each_step --json $O/rest.json > $O/rest.txt 2>&1
 echo "rc $?"; grep -E "programs, |no replay" $O/rest.txt | cut -c1-300)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "programs $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "targets met" $O/p-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o296.tgz -C /tmp o296
echo "end $(date +%T)"
