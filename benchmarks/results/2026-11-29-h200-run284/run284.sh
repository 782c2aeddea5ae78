#!/bin/bash
# forty-sixth session, run 284 (issue 50): value reads beside trailing downloads answered from the
# reply's copy; the GPU tests of trailing downloads, lifetimes, downloads through graphs, stretch
# replay and malformed headers against local CuPy; then 16 unseen loops (12 that read after their
# step's closing read, 4 whose reads alone the lane serves) timed on / off / off / on (GPUWB_PREFETCH).
#   run(command="bash .gpu/run284.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o284; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_trailing_downloads_lifetimes.py tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_downloads_streamed.py \
  tests/gpu_backend/test_downloads_replayed_corners.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_bad_stretch_input.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
P=reductions_axes,reductions_with_out_and_dtype,empty_arrays,integer_division_by_zero,edge_float_params,special_scalars,int64_edge_scalars,nan_inf_zero_scalars,fft_in_loop,scalar_kind_zoo,param_overflows_its_dtype,numpy_scalar_params,lane_two_floats_step,several_reads_per_iteration,same_read_twice,int8_uint16_wraparound
for t in on off off2 on2; do pf=1; case $t in off*) pf=0;; esac
 (cd .gpu/new && echo "$t $(date +%T)" && GPUWB_PREFETCH=$pf PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/$t.json > $O/$t.txt 2>&1
  echo "rc $?"; grep -A2 "^campaign" $O/$t.txt | cut -c1-100; grep -E "with problems" $O/$t.txt)
done
tar czf $OUT/o284.tgz -C /tmp o284
echo "end $(date +%T)"
