#!/bin/bash
# sixty-first session, run 341 (issue 51). Deep company (arbiter/service.py DEEP_COMPANY, the
# pool's share_deep_company): a session whose user keeps its work backlogged beside weighing
# company that all does too launches a long replay whose next message waits whole. share
# (deep company on) against share+nodeepcompany (as before) and none: three-1:2:4 (the miss it
# targets; every user deep), big-vs-small and interactive+2 and long-vs-small (other scenarios
# where every weighing user is deep: must not lose), sync-1:2:4 and mixed-1:2:4 (company that
# waits for values: nothing should change).
#   run(command="bash .gpu/run341.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o341; mkdir -p $O
save() { tar czf $OUT/o341.tgz -C /tmp o341; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev ff49c6e + deep company (working tree) $(date +%T)"
left() { echo $((575 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(sync|mixed|three|interactive|big|long|dl-mix)" $O/w$n.txt | cut -c1-160
}
P=none,share,share+nodeepcompany
pass 1 150 --policies $P --scenarios three-1:2:4,big-vs-small,interactive+2
pass 2 150 --policies $P --rotate 1 --scenarios three-1:2:4,sync-1:2:4,mixed-1:2:4
pass 3 60 --policies $P --rotate 2 --scenarios long-vs-small
pass 4 60 --policies $P --rotate 2 --scenarios three-1:2:4
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
