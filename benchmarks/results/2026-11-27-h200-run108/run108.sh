#!/bin/bash
# twenty-fourth session, run 108: the lone interactive user's p99 under share, 2.75 ms in run 107 against none's 0.92:
# the steady lane or the host? fairness.py's alone-interactive and interactive+2048 under none, share and
# share+nolane (GPUWB_STEADY_LANE=0), two passes.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run108.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o108
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 200 python3 benchmarks/fairness.py --policies none,share,share+nolane --calibrate none \
    --scenarios alone-interactive,interactive+2048 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json /tmp/o108/f$pass.json > /tmp/o108/f$pass.txt 2>&1
  echo "pass $pass rc $? $(date +%T)"
  grep -E "^(alone-interactive|interactive\+2048) " /tmp/o108/f$pass.txt
done
tar czf $OUT/o108.tgz -C /tmp o108
echo "end $(date +%T)"
