#!/bin/bash
# forty-sixth session, run 283 (issue 50): does asking for trailing downloads cost the curated
# programs anything? programs.py (the standing's 26), GPUWB_PREFETCH off / on / on / off (run 282 the other order), one call
# each, at the session's tree.
#   run(command="bash .gpu/run283.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o283; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
for t in off on on2 off2; do pf=1; case $t in off*) pf=0;; esac
 (cd .gpu/new && echo "$t rev $(cat REV) $(date +%T)" && GPUWB_PREFETCH=$pf PYTHONPATH=/tmp/site:$PWD timeout 130 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/$t.json > $O/$t.txt 2>&1
  echo "programs rc $? $(date +%T)"; grep -E "targets met|bitwise equal" $O/$t.txt | cut -c1-110)
done
tar czf $OUT/o283.tgz -C /tmp o283
echo "end $(date +%T)"
