#!/bin/bash
# twenty-second session, run 97: the twenty-first session's last changes measured on a GPU at 1d52900 (issue 51):
# interactive_beside.py with the reads made within the client's gaps (default) beside GPUWB_READ_GAP_SHARE=0 and
# GPUWB_RUN_AHEAD_BESIDE=0; run 95's fairness scenarios (none, share+aheadalone, share) in two passes; and the hot
# sync with its worker's phases as issue 50's baseline for this session.
# run(command="bash .gpu/run97.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o97
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 90 python3 benchmarks/interactive_beside.py --devices 0 --policy share --requests 300 --every-ms 10 \
    --sides default,GPUWB_READ_GAP_SHARE=0,GPUWB_RUN_AHEAD_BESIDE=0 --json /tmp/o97/ib$pass.json > /tmp/o97/ib$pass.txt 2>&1
  echo "interactive_beside pass $pass rc $? $(date +%T)"; grep -v "^ *[{}\"]" /tmp/o97/ib$pass.txt | head -12
done
timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
  --json /tmp/o97/r.json > /tmp/o97/r.txt 2>&1
grep -E "^(hot_sync|raw)|target" /tmp/o97/r.txt | head -3
timeout 90 python3 benchmarks/worker_phases.py --devices 0 --reps 2000 --loops hot_sync,chain20 --sides fast --policy share \
  --json /tmp/o97/w.json > /tmp/o97/w.txt 2>&1
head -8 /tmp/o97/w.txt
for pass in 1 2; do
  timeout 200 python3 benchmarks/fairness.py --policies none,share+aheadalone,share --calibrate none \
    --scenarios interactive+2048,interactive+1,dl-mix,sync-long-vs-small --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o97/f$pass.json > /tmp/o97/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o97/f$pass.txt | head -3
  grep -E "^(interactive\+2048|interactive\+1|dl-mix|sync-long-vs-small) " /tmp/o97/f$pass.txt
done
tar czf $OUT/o97.tgz -C /tmp o97
echo "end $(date +%T)"
