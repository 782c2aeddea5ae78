#!/bin/bash
# thirty-first session, run 160 (issue 50): batches of matrices multiplied inside the graphs
# (matmul's strided batched GEMM): the probe's nineteen cases, the captured-products GPU
# tests and the stretch-replay product tests against local CuPy.
#   run(command="bash .gpu/run160.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o160; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 40 python3 benchmarks/gemm_capture_probe.py --reps 300 --json $O/probe.json > $O/probe.txt 2>&1
echo "probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/probe.txt | head -30
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 80 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_captured_products.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
cd ../..
tar czf $OUT/o160.tgz -C /tmp o160
echo "end $(date +%T)"
