#!/bin/bash
# forty-ninth session, run 303 (issue 51): the standing at this session's code, the first since run 268
# (the forty-fourth session); every change since was issue 50's (replays run ahead, the steady
# lane, user kernels captured, graphs by value); share beside none, every scenario
# issue 51's targets name, one pass; then the share policy's GPU tests.
#   run(command="bash .gpu/run303.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o303; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 450 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,three-1:2:4,long-vs-small,sync-long-vs-small,interactive+2048,dl-mix,mixed-1:2:4,many-sync,interactive+syncs,alone-sync,alone-interactive \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->|refused|done$' $O/f.txt | cut -c1-150 | head -40
echo "lost or malformed: $(grep -cE 'SessionLost|malformed requests|ended this session' $O/f.txt)"; grep -E 'SessionLost|malformed requests|ended this session' $O/f.txt | head -5 | cut -c1-200
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 100 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_share_pool.py tests/gpu_backend/test_share_round_trips.py tests/gpu_backend/test_share_policy.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300
cd ../..
tar czf $OUT/o303.tgz -C /tmp o303
echo "end $(date +%T)"
