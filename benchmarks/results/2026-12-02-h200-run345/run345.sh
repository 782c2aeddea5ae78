#!/bin/bash
# sixty-first session, run 345 (issue 51): sync-1:2:4's standing bias (the weight-4 user
# 0.555-0.565 of the work against 0.571 in twelve passes, runs 330-344): its batches, time-
# sliced beside the others, run past the 8 ms up to which a user is waited for in its gaps,
# so the others launch into its round trips. share+anticipate32 waits for users whose
# batches average up to 32 ms. none, share and share+anticipate32, two rotated passes.
#   run(command="bash .gpu/run345.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o345; mkdir -p $O
save() { tar czf $OUT/o345.tgz -C /tmp o345; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev 9b24453b + share_anticipate_batch_ms (working tree) $(date +%T)"
left() { echo $((580 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(sync|mixed|three|interactive|big|long|dl-mix|many|alone)" $O/w$n.txt | cut -c1-160
}
P=none,share,share+anticipate32
pass 1 80 --policies $P --rotate 1 --scenarios sync-1:2:4
pass 2 80 --policies $P --rotate 2 --scenarios sync-1:2:4
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
