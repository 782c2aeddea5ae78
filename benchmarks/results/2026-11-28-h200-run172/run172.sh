#!/bin/bash
# thirty-second session, run 172 (issue 50): CuPy's own random tests of the Generator API and
# the bit generators through the proxy beside local CuPy, now that a Generator's draws are made
# inside a held stretch's graphs (no outcome may change). The suite's sources in .gpu/suite
# (benchmarks/cupy_suite/fetch.py 14.2.0 with GPUWB_CUPY_SUITE_CACHE=.gpu/suite).
#   run(command="bash .gpu/run172.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o172
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/new; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 300 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders random --devices 0 --jobs 15 --subsample \
  --timeout 100,190 --keep /tmp/o172/suite --json /tmp/o172/suite.json -- -k "generator_api or bit_generator" > /tmp/o172/s.txt 2>&1
echo "suite rc $?"; tail -16 /tmp/o172/s.txt
tar czf $OUT/o172.tgz -C /tmp o172
echo "end $(date +%T)"
