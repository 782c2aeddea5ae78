#!/bin/bash
# fifty-ninth session, run 339 (issue 51). Run 338, pass 4: never pacing a long replay beside
# weighing company (share+pacedreplay1000000) gave three-1:2:4 a one-second split error of
# 0.7 / 2.6 % (share 3.0 / 8.1 %) and 0.04 less work, one pass, no none. A replay within the
# session's own lead stops a user held back no later than its paced ops; the heaviest users
# launch 16 ms deep. New diagnostic share+pacebylead: paced only past the session's lead.
# Two passes (rotated) of none, share, share+pacebylead, share+pacedreplay1000000 on the
# weighted and the long-vs-small scenarios whose targets are missed; mixed-1:2:4 in pass 1.
#   run(command="bash .gpu/run339.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o339; mkdir -p $O
save() { tar czf $OUT/o339.tgz -C /tmp o339; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
left() { echo $((580 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
P=none,share,share+pacebylead,share+pacedreplay1000000
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(sync|mixed|three)" $O/w$n.txt | cut -c1-130
}
pass 1 250 --policies $P --scenarios sync-1:2:4,three-1:2:4,sync-long-vs-small,mixed-1:2:4
pass 2 190 --policies $P --rotate 1 --scenarios sync-1:2:4,three-1:2:4,sync-long-vs-small
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
