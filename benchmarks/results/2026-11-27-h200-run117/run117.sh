#!/bin/bash
# twenty-fifth session, run 117: the session's end state on CuPy, part 1 of 2: GPU tests of
# fuse, user kernels, vectorize, jit kernels, the steady lane and stretch replay against local
# CuPy; the first unseen-program campaign (91 programs) against local CuPy; programs.py.
# (Part 2, run 118: the second campaign and CuPy's fusion tests.)
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run117.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o117
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_functional.py tests/kernelproxy/test_custom_kernels.py \
  tests/kernelproxy/test_jit_vectorize.py tests/kernelproxy/test_jit_rawkernel.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_aliased_inputs.py > /tmp/o117/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o117/t.txt | tail -12
FIRST=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies import PROGRAMS; print(','.join(PROGRAMS))")
timeout 230 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$FIRST" --json /tmp/o117/u.json > /tmp/o117/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o117/u.txt; grep -c Traceback /tmp/o117/u.txt
timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --programs fused_loop,chain20,black_scholes,stencil,no_sync_loop,momentum_no_sync --json /tmp/o117/p.json > /tmp/o117/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o117/p.txt | head -10
tar czf $OUT/o117.tgz -C /tmp o117
echo "end $(date +%T)"
