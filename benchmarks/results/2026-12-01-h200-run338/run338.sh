#!/bin/bash
# fifty-ninth session, run 338 (issue 51). Run 337: beside an idle session forced to be
# company, the 2048² GEMM user lost 0.03-0.05 whatever its lead or grain; in company its
# ~10 ms replays are re-run op by op, paced (SHARE_UNPACED_REPLAY), losing their graphs and
# run ahead. New, off by default: share+lightcompany (a worker whose company is only light
# users by their history launches its long replays whole). Pass 1: none, share,
# share+lightcompany interleaved on interactive+2048 (the miss), interactive+syncs and
# mixed-1:2:4 (heavy company: nothing should move). Passes 2-3: interactive+2048 again,
# rotated. Pass 4: share+pacedreplay1000000 (never paced, whatever the company) beside
# share on three-1:2:4 and interactive+2048: what pacing buys where the company weighs.
#   run(command="bash .gpu/run338.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o338; mkdir -p $O
save() { tar czf $OUT/o338.tgz -C /tmp o338; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
left() { echo $((580 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
P=none,share,share+lightcompany
pass() {   # name, min seconds left, fairness.py arguments...
  local n=$1 need=$2; shift 2
  if [ $(left) -lt $need ]; then echo "pass $n skipped: $(left) s left"; return; fi
  timeout $(left) python3 benchmarks/fairness.py $F "$@" --json $O/w$n.json > $O/w$n.txt 2>&1
  echo "pass $n rc $? $(date +%T)"; save
  grep -E "^(interactive|mixed|three)" $O/w$n.txt | cut -c1-130
}
pass 1 150 --policies $P --scenarios interactive+2048,interactive+syncs,mixed-1:2:4
pass 2 60 --policies $P --rotate 1 --scenarios interactive+2048
pass 3 60 --policies $P --rotate 2 --scenarios interactive+2048
pass 4 80 --policies share,share+pacedreplay1000000 --scenarios three-1:2:4,interactive+2048
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
