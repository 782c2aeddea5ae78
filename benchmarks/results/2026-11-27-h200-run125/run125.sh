#!/bin/bash
# twenty-sixth session, run 125 (random draws run ahead): CuPy's random tests through the
# proxy beside local CuPy (the draws ahead must change no outcome; the standing: 902 of 903).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run125.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o125
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 540 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders random --devices 0 --jobs 15 --subsample \
  --timeout 120,400 --keep /tmp/o125/suite --json /tmp/o125/suite.json > /tmp/o125/s.txt 2>&1
echo "suite rc $?"; tail -16 /tmp/o125/s.txt
tar czf $OUT/o125.tgz -C /tmp o125
echo "end $(date +%T)"
