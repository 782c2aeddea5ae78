#!/bin/bash
# sixty-first session, run 344 (issue 51): deep company as mended after the review (judged per
# session), against share+nodeepcompany and none, on three-1:2:4 (the scenario it is for) and
# sync-1:2:4 (nobody deep: the same conduct), two passes in rotated orders.
#   run(command="bash .gpu/run344.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o344; mkdir -p $O
save() { tar czf $OUT/o344.tgz -C /tmp o344; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev f38fc3a6 (working tree) $(date +%T)"
left() { echo $((580 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(sync|mixed|three|interactive|big|long|dl-mix|many|alone)" $O/w$n.txt | cut -c1-160
}
P=none,share,share+nodeepcompany
pass 1 90 --policies $P --rotate 1 --scenarios three-1:2:4,sync-1:2:4
pass 2 90 --policies $P --rotate 2 --scenarios three-1:2:4,sync-1:2:4
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
