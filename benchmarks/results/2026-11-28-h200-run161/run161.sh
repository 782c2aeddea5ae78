#!/bin/bash
# thirty-second session, run 161 (issue 50): (1) the review's cupy_products refactor on a GPU
# (the probe's nineteen cases, the captured-products and stretch-replay GPU tests); (2) can a
# cuRAND draw be captured and replayed with the next numbers (curand_capture_probe.py, new);
# (3) conjugate gradient slower with yielding spins? the sides in one call, yielding against
# not (ipc, ipc-noyield), OpenBLAS's threads as they are and then one.
#   run(command="bash .gpu/run161.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o161; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/curand_capture_probe.py --json $O/curand.json > $O/curand.txt 2>&1
echo "curand probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/curand.txt | head -40
timeout 40 python3 benchmarks/gemm_capture_probe.py --reps 300 --json $O/probe.json > $O/probe.txt 2>&1
echo "gemm probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/probe.txt | tail -6
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 80 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_captured_products.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
P=conjugate_gradient,logistic_regression,mlp_training,hot_sync,chain20,stencil
for blas in default 1; do
  if [ $blas = 1 ]; then export OPENBLAS_NUM_THREADS=1; fi
  timeout 150 python3 benchmarks/programs.py --devices 0 --rounds 3 --own-pools --transports ipc,ipc-noyield \
    --programs $P --json $O/p-$blas.json > $O/p-$blas.txt 2>&1
  echo "programs openblas=$blas rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc" $O/p-$blas.txt | cut -c1-120
done
cd ../..
tar czf $OUT/o161.tgz -C /tmp o161
echo "end $(date +%T)"
