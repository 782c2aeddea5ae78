#!/bin/bash
# thirty-third session, run 177 (issue 50): CuPy's own tests through the proxy beside local
# CuPy now that a ufunc call's scalars and a distribution's are stretch parameters (no outcome
# may change): the random and math folders, subsampled. The suite's sources in .gpu/suite
# (benchmarks/cupy_suite/fetch.py 14.2.0 with GPUWB_CUPY_SUITE_CACHE=.gpu/suite).
#   run(command="bash .gpu/run177.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o177
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/new; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for folder in random math; do
  timeout 270 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders $folder --devices 0 --jobs 15 --subsample \
    --timeout 80,170 --json /tmp/o177/suite-$folder.json > /tmp/o177/s-$folder.txt 2>&1
  echo "suite $folder rc $? $(date +%T)"; tail -6 /tmp/o177/s-$folder.txt
done
tar czf $OUT/o177.tgz -C /tmp o177
echo "end $(date +%T)"
