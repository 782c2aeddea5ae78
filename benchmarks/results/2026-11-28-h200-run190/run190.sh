#!/bin/bash
# thirty-fourth session, run 190 (issue 50): CuPy's indexing tests through the proxy with the
# final commit (a basic index's ints are stretch parameters now): cupy_tests/indexing_tests
# and core_tests' ndarray indexing modules, local CuPy against the proxy.
#   run(command="bash .gpu/run190.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o190
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/new; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 220 python3 benchmarks/cupy_suite/run.py --sides local,proxy \
  --folders indexing,cupy_tests/core_tests/test_ndarray_indexing.py,cupy_tests/core_tests/test_ndarray_adv_indexing.py \
  --devices 0 --jobs 15 --timeout 80,150 --json /tmp/o190/suite-indexing.json > /tmp/o190/s-indexing.txt 2>&1
echo "suite rc $? $(date +%T)"; tail -12 /tmp/o190/s-indexing.txt | cut -c1-200
tar czf $OUT/o190.tgz -C /tmp o190
echo "end $(date +%T)"
