#!/bin/bash
# sixty-first session, run 342 (issue 51): the standing with deep company the default
# (share_deep_company, run 341), share beside none on issue 51's scenarios in one pass; then
# long-vs-small (the default ~75 ms kernels) with two knobs that move how the small user is
# held back beside a long kernel's late charge (share+nosilent: no silent part assumed;
# share+window16: a 16 ms window); and sync-long-vs-small.
#   run(command="bash .gpu/run342.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o342; mkdir -p $O
save() { tar czf $OUT/o342.tgz -C /tmp o342; }
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
pass 1 250 --policies none,share --long 8192 --scenarios sync-1:1,sync-1:2:4,three-1:2:4,interactive+2048,dl-mix,mixed-1:2:4,many-sync,interactive+syncs,alone-sync,alone-interactive
pass 2 80 --policies none,share,share+nosilent,share+window16 --scenarios long-vs-small
pass 3 30 --policies none,share --rotate 1 --scenarios sync-long-vs-small
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
