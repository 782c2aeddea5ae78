#!/bin/bash
# forty-ninth session, run 304 (issue 50): the standing at this session's code: the 26
# curated programs (programs.py, one call, bitwise against local CuPy), then the 292 unseen
# loops timed against local CuPy (unseen_speed.py, one call, as many as --budget allows).
#   run(command="bash .gpu/run304.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o304; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "programs rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "rc $?"; grep -E "targets met|bitwise equal" $O/p.txt | head -3)
(cd .gpu/new && echo "unseen rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 460 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 420 --json $O/us.json > $O/us.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "with problems|^all |not begun" $O/us.txt | tail -4 | cut -c1-200)
tar czf $OUT/o304.tgz -C /tmp o304
echo "end $(date +%T)"
