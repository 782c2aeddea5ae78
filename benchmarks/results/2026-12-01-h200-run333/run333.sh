#!/bin/bash
# fifty-eighth session, run 333 (issue 51): the standing with the silent part's deadline
# mended (164cd51) and every default of the fifty-seventh session, measured with
# fairness.py --interleave (both pools open at once, each scenario under none and share back
# to back, the order rotated scenario by scenario): the scenarios whose targets were missed
# or near (work against none's, sync-1:2:4 p99, mixed, many-sync) and a lone user. Two
# passes, the second with --rotate 1, so every scenario runs once in each order.
#   run(command="bash .gpu/run333.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o333; mkdir -p $O
save() { tar czf $OUT/o333.tgz -C /tmp o333; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
S=sync-1:2:4,many-sync,three-1:2:4,interactive+2048,interactive+syncs,sync-long-vs-small,mixed-1:2:4,alone-sync
for i in 1 2; do
  LEFT=$((580 - ($(date +%s) - T0)))
  [ $LEFT -lt 200 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  timeout $LEFT python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --interleave --rotate $((i - 1)) --scenarios $S --seconds 6 --calibrate-seconds 2 \
    --lead 2 --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(sync-|many-|three-|interactive\+|mixed-|alone-)" $O/w$i.txt | cut -c1-140
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
