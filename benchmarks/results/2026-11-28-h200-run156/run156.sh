#!/bin/bash
# thirty-first session, run 156 (issue 51): do yielding spins (3ab3443) change the syncing
# users' split? Runs 154-155 found a reply read on the worker's own CPU stalling both ~1 ms;
# several users' clients and workers spin on one host. fairness.py under `share`, the
# syncing 1:2:4, six syncing users and mixed kinds 1:2:4, the new tree (.gpu/new) and the
# tree before (.gpu/old, bce2b43) alternating, new old new old, and `none` once on the new.
#   run(command="bash .gpu/run156.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o156; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/old/REV) $(cat .gpu/new/REV) $(date +%T)"
i=0
for run in new:share old:share new:share old:share new:none; do
  i=$((i+1)); tree=${run%%:*}; policy=${run##*:}
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 170 python3 benchmarks/fairness.py --policies $policy --calibrate none \
    --scenarios sync-1:2:4,many-sync,mixed-1:2:4 --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json $O/f-$i-$tree-$policy.json > $O/f-$i-$tree-$policy.txt 2>&1)
  echo "fairness $i $tree $policy rc $? $(date +%T)"
  grep -vE "^ |^\{|^\}|^->" $O/f-$i-$tree-$policy.txt | cut -c1-170 | head -30
done
tar czf $OUT/o156.tgz -C /tmp o156
echo "end $(date +%T)"
