#!/bin/bash
# forty-eighth session, run 298 (issue 50): the standing of the 280 unseen loops at the
# session's last code (unseen_speed.py, every loop timed against local CuPy, one call).
#   run(command="bash .gpu/run298.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o298; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "unseen rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 232 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "median|with problems|in all" $O/us.txt | tail -6 | cut -c1-200)
tar czf $OUT/o298.tgz -C /tmp o298
echo "end $(date +%T)"
