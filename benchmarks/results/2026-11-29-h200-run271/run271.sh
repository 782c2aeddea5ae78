#!/bin/bash
# forty-fourth session, run 271 (issues 50 and 51): does two steps in flight (lone sessions
# only, worker/lane_overlap.py) cost users beside others anything? dl-mix's interactive p99
# under share was 1.70 ms in run 268 against 0.53 in run 246. The scenarios with a
# device-bound loop (dl-mix, sync-1:2:4, interactive+2048) under none, share and
# share+nooverlap (GPUWB_OVERLAP_STEPS=0), two passes.
#   run(command="bash .gpu/run271.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o271; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2; do
  timeout 260 python3 benchmarks/fairness.py --policies none,share,share+nooverlap --calibrate none \
    --scenarios dl-mix,sync-1:2:4,interactive+2048 \
    --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f$i.json > $O/f$i.txt 2>&1
  echo "fairness $i rc $? $(date +%T)"
  grep -E "^(dl-mix|sync-1:2:4|interactive\+2048) " $O/f$i.txt | cut -c1-150
  grep -E "trainer a|error 1 s, mean|interactive p99 over" $O/f$i.txt | cut -c1-110
done
cd ../..
tar czf $OUT/o271.tgz -C /tmp o271
echo "end $(date +%T)"
