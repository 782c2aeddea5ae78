#!/bin/bash
# fifty-fourth session, run 317 (issue 50): CuPy's own suite through the proxy at today's
# tree (fast path, stretch replay, joining: every default on), the proxy side only against
# run 4's local outcomes (the same subsample, seed 20261123), as runs 5-11 did; compared
# test by test with the proxy outcomes of runs 4-22 afterwards, on the development machine
# (compare.py beside this file).
#   run(command="bash .gpu/run317.sh", carry=[".whl", ".gpu"])
set -u
(cd .gpu && tar xzf suite.tgz && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o317; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
PYTHONPATH=/tmp/site:$PWD timeout 575 python3 benchmarks/cupy_suite/run.py --sides local,proxy --subsample \
  --jobs 15 --timeout 540,540 --baseline ../suite/baseline-run4-local.json --keep $O/suite --json $O/cupy-suite.json \
  > $O/suite.txt 2>&1
echo "suite rc $? $(date +%T)"
rm -rf $O/suite/*.log.gz; (cd $O/suite && gzip -q *.log 2>/dev/null)
tar czf $OUT/o317.tgz -C /tmp o317
tail -40 $O/suite.txt | cut -c1-200
echo "end $(date +%T)"
