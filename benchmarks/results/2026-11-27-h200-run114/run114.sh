#!/bin/bash
# twenty-fifth session, run 114 (after run 113 found a round trip a call and tests that CuPy refuses): cupy.fuse fused in the pool (kernelproxy/fuse_trace.py,
# devices/fused_functions.py): its tests against local CuPy's fuse (bitwise), the unseen loop
# that was one bit off, programs.py's fused_loop beside its others, CuPy's own fusion tests
# (local, proxy).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   CuPy 14.2.0's suite in .gpu/suite/cupy-14.2.0;
#   run(command="bash .gpu/run114.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o114
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_functional.py > /tmp/o114/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|Error" /tmp/o114/t.txt | tail -12
timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs fused_functions,complex_mandelbrot,nested_alternating_loops \
  --json /tmp/o114/u.json > /tmp/o114/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, |fused_functions|differ" /tmp/o114/u.txt | head; grep -c Traceback /tmp/o114/u.txt
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --programs fused_loop,black_scholes,chain20 --json /tmp/o114/p.json > /tmp/o114/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o114/p.txt | head -12
timeout 420 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders core --devices 0 --jobs 14 --subsample --timeout 180,210 \
  --keep /tmp/o114/suite --json /tmp/o114/suite.json -- -k fusion_tests > /tmp/o114/s.txt 2>&1
echo "suite rc $?"; tail -25 /tmp/o114/s.txt
tar czf $OUT/o114.tgz -C /tmp o114
echo "end $(date +%T)"
