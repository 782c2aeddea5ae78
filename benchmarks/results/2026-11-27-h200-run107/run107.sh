#!/bin/bash
# twenty-fourth session, run 107: issue 51's standing at HEAD (the steady lane on, the defaults): fairness.py, none /
# share side by side, every scenario run 100 measured (users that sync, deep 1:2:4, long vs small, the interactive
# user beside 2048² GEMMs and in dl-mix, lone users).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run107.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o107
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,three-1:2:4,sync-long-vs-small,long-vs-small,interactive+2048,dl-mix,alone-sync,alone-interactive \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o107/f.json > /tmp/o107/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -E "^(sync|three|long|interactive|dl-mix|alone)" /tmp/o107/f.txt | head -40; grep -E "i.s replays|MISSED" /tmp/o107/f.txt | head -40
tar czf $OUT/o107.tgz -C /tmp o107
echo "end $(date +%T)"
