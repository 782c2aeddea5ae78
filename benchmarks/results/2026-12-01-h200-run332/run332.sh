#!/bin/bash
# fifty-seventh session, run 332 (issue 51). Run 331's two passes put share 0.024-0.028 below
# none for a user alone (alone-sync, alone-train), with the policy run second in a pass
# 0.02-0.05 ahead of the one run first whatever it was. Is a lone user's cost under share
# real, and is it the lone session's pacing (worker/pacing.py: LONE_LEAD, 2 ms of work
# launched ahead and a marker as often, where none runs with no lease and no hold-back)?
# none, share and share+lead20000 (every session's lead 20 ms, so a lone one launches
# 20 ms ahead) on alone-sync, alone-train and alone-2048, 4 s, three passes, the order
# rotated.
#   run(command="bash .gpu/run332.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o332; mkdir -p $O
save() { tar czf $OUT/o332.tgz -C /tmp o332; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
ORDERS=("none,share,share+lead20000" "share,share+lead20000,none" "share+lead20000,none,share")
for i in 1 2 3; do
  LEFT=$((470 - ($(date +%s) - T0)))
  [ $LEFT -lt 140 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  timeout $LEFT python3 benchmarks/fairness.py --policies ${ORDERS[$((i-1))]} --calibrate none \
    --scenarios alone-sync,alone-train,alone-2048 --seconds 4 --calibrate-seconds 2 --lead 2 \
    --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^alone-" $O/w$i.txt | cut -c1-100
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
