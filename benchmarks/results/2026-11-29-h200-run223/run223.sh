#!/bin/bash
# thirty-eighth session, run 223 (issue 51): a device nobody used for 50 ms forgets (share,
# the new default) beside share without it (share+forget0) and none, one call: the scenarios
# whose users started with one or two held back (many-sync, three-1:2:4, sync-1:2:4), mixed
# kinds and dl-mix.
#   run(command="bash .gpu/run223.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o223; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 300 python3 benchmarks/fairness.py --policies none,share,share+forget0 --calibrate none \
  --scenarios many-sync,three-1:2:4,sync-1:2:4,mixed-1:2:4,dl-mix \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"
grep -vE '^ |^\{|^\}|^->|refused|done$' $O/f.txt | cut -c1-150 | head -20
cd ../..
tar czf $OUT/o223.tgz -C /tmp o223
echo "end $(date +%T)"
