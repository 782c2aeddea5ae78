#!/bin/bash
# twenty-eighth session, run 141 (issues 50 and 51): is a lone interactive user's tail under
# `share` above `none`'s (run 139: p99 0.39 against 0.34 ms, one pass) or the host's noise?
# interactive_beside.py --busy none with the sides alternating, local CuPy's twin beside;
# fairness.py's syncing 1:2:4 and lone users, `none` and `share`, one pass; the GPU tests of
# pushed replies (a ^C landing anywhere in a pushed loop, new).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run141.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o141; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
timeout 200 python3 benchmarks/interactive_beside.py --devices 0 --busy none --requests 500 \
  --sides local,policy=none,policy=share,policy=share,policy=none,local,policy=none,policy=share \
  --json $O/i.json > $O/i.txt 2>&1
echo "interactive rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/i.txt | head -10
timeout 300 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:2:4,alone-interactive,alone-sync \
  --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->' $O/f.txt | cut -c1-150 | head -40
tar czf $OUT/o141.tgz -C /tmp o141
echo "end $(date +%T)"
