#!/bin/bash
# twenty-fifth session, run 118: the session's end state on CuPy, part 2 of 2: the second
# unseen-program campaign (83 programs) against local CuPy, and CuPy's own fusion tests
# (local, proxy) given the time the proxy side needs.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   CuPy 14.2.0's suite in .gpu/suite/cupy-14.2.0;
#   run(command="bash .gpu/run118.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o118
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
SECOND=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_more import PROGRAMS; print(','.join(PROGRAMS))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$SECOND" --json /tmp/o118/u.json > /tmp/o118/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o118/u.txt; grep -c Traceback /tmp/o118/u.txt
timeout 370 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders core --devices 0 --jobs 15 --subsample --timeout 80,280 \
  --keep /tmp/o118/suite --json /tmp/o118/suite.json -- -k fusion_tests > /tmp/o118/s.txt 2>&1
echo "suite rc $?"; tail -16 /tmp/o118/s.txt
tar czf $OUT/o118.tgz -C /tmp o118
echo "end $(date +%T)"
