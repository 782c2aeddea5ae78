#!/bin/bash
# twenty-sixth session, run 127 (issue 51, mixed kinds under weights 1:2:4): where the weights go.
# fairness.py's mixed-1:2:4 under share with the workers' pacing traces and the arbiter's
# decisions kept (GPUWB_PACING_TRACE), beside none; the traces come back for the analysis.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run127.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o127/tr
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_PACING_TRACE=/tmp/o127/tr timeout 240 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios mixed-1:2:4 --long 8192 --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o127/f.json > /tmp/o127/f.txt 2>&1
echo "fairness rc $?"; grep -E "^mixed|MISSED|met|why" /tmp/o127/f.txt | cut -c1-230 | head -20
du -sh /tmp/o127/tr; ls /tmp/o127/tr | head
tar czf $OUT/o127.tgz -C /tmp o127
echo "end $(date +%T)"
