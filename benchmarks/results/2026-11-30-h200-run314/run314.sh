#!/bin/bash
# fifty-second session, run 314 (issue 50): the session's last tree on a GPU, whole: every
# unseen loop (all thirteen campaigns) bit for bit against local CuPy, and the curated
# programs against local CuPy (speed and bits), one call each.
#   run(command="bash .gpu/run314.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o314; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
PYTHONPATH=/tmp/site:$PWD timeout 330 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json $O/loops.json > $O/loops.txt 2>&1
echo "loops rc $? $(date +%T)"; grep -E "programs, |Traceback|with problems" $O/loops.txt | head -5
PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "bitwise|programs|<= 1.0" $O/p.txt | tail -6 | cut -c1-300
tar czf $OUT/o314.tgz -C /tmp o314
echo "end $(date +%T)"
