#!/bin/bash
# twenty-sixth session, run 128 (the session's end state: a pool's workers start with its
# environment as the pool started): the GPU tests of stretch replay, run ahead, the steady lane,
# draws ahead, remote random, fuse and the zygote against local CuPy.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run128.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o128
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_fuse_programs.py tests/gpu_backend/test_zygote.py tests/kernelproxy/test_stretch_memory.py \
  > /tmp/o128/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o128/t.txt | tail -10
tar czf $OUT/o128.tgz -C /tmp o128
echo "end $(date +%T)"
