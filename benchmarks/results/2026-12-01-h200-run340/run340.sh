#!/bin/bash
# sixtieth session, run 340 (issue 51). (1) The review's fix: a light user's batch past its
# 2 ms burst now weighs, its company paced till it ends (SharePolicy.weighs,
# Arbiter._count_weighing_changes): none and share on interactive+2048 (run 338's win under
# light company must stand), interactive+long (the interactive op waits behind ~22 ms
# kernels: the case the fix changes) and dl-mix. (2) New diagnostic share+unpacedbacklog: a
# replay whose session's next message is waiting already is never paced (never pacing at
# all met three-1:2:4's split in three passes, runs 338-339, and lost sync-1:2:4's and
# mixed-1:2:4's): beside none and share on three-1:2:4, sync-1:2:4, mixed-1:2:4, two passes.
#   run(command="bash .gpu/run340.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o340; mkdir -p $O
save() { tar czf $OUT/o340.tgz -C /tmp o340; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev ee4054b (working tree) $(date +%T)"
left() { echo $((575 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(sync|mixed|three|interactive|dl-mix)" $O/w$n.txt | cut -c1-140
}
pass 1 100 --policies none,share --long 8192 --scenarios interactive+2048,interactive+long,dl-mix
P=none,share,share+unpacedbacklog
pass 2 140 --policies $P --scenarios three-1:2:4,sync-1:2:4,mixed-1:2:4
pass 3 140 --policies $P --rotate 1 --scenarios three-1:2:4,sync-1:2:4,mixed-1:2:4
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
