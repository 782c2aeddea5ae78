#!/bin/bash
# sixty-first session, run 343 (issue 51): run 342's interactive+syncs under share gave an
# interactive p99 of 7.5 ms with 337 requests of 645 (the signature seen twice before, runs
# 219-221, unexplained): is it deep company's? none, share and share+nodeepcompany, three
# passes in rotated orders.
#   run(command="bash .gpu/run343.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o343; mkdir -p $O
save() { tar czf $OUT/o343.tgz -C /tmp o343; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev f8e4f8a1 (working tree) $(date +%T)"
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
pass 1 60 --policies $P --scenarios interactive+syncs
pass 2 60 --policies $P --rotate 1 --scenarios interactive+syncs
pass 3 60 --policies $P --rotate 2 --scenarios interactive+syncs
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
