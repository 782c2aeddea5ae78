#!/bin/bash
# fifty-eighth session, run 337 (issue 51), prepared for the next session (not run: the
# fifty-eighth's device time was spent). Run 336 found an idle notebook's open session cost
# the 2048² GEMM user beside it 0.04 of its rate under share, as the interactive user does;
# idle sessions are now no company (company_idle_ms, 1 s). Pass 1: is that so on a GPU?
# none, share and share+companyidle0 (every session attached is company, as before)
# interleaved on alone-2048+idle, alone-sync+idle and interactive+2048. Pass 2: which part of
# company costs the saturating user? Beside the idle session, forced to be company
# (companyidle0; the idle session uses no device time, so only the saturating worker's own
# pacing differs): its lead 16 ms (share+companyidle0), 2 ms as alone (+deeplead2), 4 ms
# (+deeplead0: SHARE_LEAD), and its markers every 4 ms (+grain4000), against share
# (alone) and none.
#   run(command="bash .gpu/run337.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o337; mkdir -p $O
save() { tar czf $OUT/o337.tgz -C /tmp o337; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
left() { echo $((580 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
timeout $(left) python3 benchmarks/fairness.py $F --policies none,share,share+companyidle0 \
  --scenarios alone-2048+idle,alone-sync+idle,interactive+2048,alone-2048 \
  --json $O/w1.json > $O/w1.txt 2>&1
echo "pass 1 rc $? $(date +%T)"; save
grep -E "^(alone-|interactive\+2048 )" $O/w1.txt | cut -c1-120
if [ $(left) -ge 150 ]; then
  timeout $(left) python3 benchmarks/fairness.py $F \
    --policies none,share,share+companyidle0,share+companyidle0+deeplead2,share+companyidle0+deeplead0,share+companyidle0+grain4000 \
    --scenarios alone-2048+idle --json $O/w2.json > $O/w2.txt 2>&1
  echo "pass 2 rc $? $(date +%T)"; save
  grep -E "^alone-2048\+idle " $O/w2.txt | cut -c1-120
else echo "pass 2 skipped"; fi
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
