#!/bin/bash
# forty-fifth session, run 272 (issue 50): the unseen loops timed (benchmarks/unseen_speed.py,
# new): all 256 loops of the correctness campaign, a session's defaults, against local CuPy
# in the same process, three alternating rounds each; then one standing call of programs.py
# as this host's reference.
#   run(command="bash .gpu/run272.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o272; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 420 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/us.txt | sed -n '/^program /,$p' | head -40 | cut -c1-150; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|in all" $O/us.txt)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 130 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p1.json > $O/p1.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p1.txt | cut -c1-110)
tar czf $OUT/o272.tgz -C /tmp o272
echo "end $(date +%T)"
