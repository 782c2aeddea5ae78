#!/bin/bash
# twenty-fifth session, run 115: cupy.fuse fused in the pool after run 114 (a kernel cache per
# fused function, NumPy scalars deferring to stand-ins, definitions keyed by a token): its
# tests against local CuPy's fuse, CuPy's own fusion tests (local, proxy), programs.py's
# fused_loop and where its time goes (step_profile.py), the unseen loop once one bit off.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   CuPy 14.2.0's suite in .gpu/suite/cupy-14.2.0;
#   run(command="bash .gpu/run115.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o115
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_functional.py tests/kernelproxy/test_custom_kernels.py \
  tests/kernelproxy/test_jit_vectorize.py > /tmp/o115/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o115/t.txt | tail -12
timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs fused_functions \
  --json /tmp/o115/u.json > /tmp/o115/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o115/u.txt
timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --programs fused_loop,chain20,black_scholes --json /tmp/o115/p.json > /tmp/o115/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o115/p.txt | head -8
timeout 100 python3 benchmarks/step_profile.py --programs fused_loop --rounds 3 --devices 0 --transports ipc \
  --json /tmp/o115/sp.json > /tmp/o115/sp.txt 2>&1
echo "step_profile rc $?"; head -30 /tmp/o115/sp.txt
timeout 330 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders core --devices 0 --jobs 14 --subsample --timeout 120,190 \
  --keep /tmp/o115/suite --json /tmp/o115/suite.json -- -k fusion_tests > /tmp/o115/s.txt 2>&1
echo "suite rc $?"; tail -16 /tmp/o115/s.txt
tar czf $OUT/o115.tgz -C /tmp o115
echo "end $(date +%T)"
