#!/bin/bash
# fifty-eighth session, run 335 (issue 51): what costs share its work in runs 333-334's two
# misses. interactive+2048 (the 2048² GEMM user 0.02-0.06 below none's rate beside the
# interactive user, never held back: run 334's trace): none, share, share+aheadalone (the
# interactive user's replay run ahead only when alone), share+deeplead0 (every session at
# the workers' 4 ms lead, not the heaviest users' 16 ms), share+grain4000. sync-long-vs-small
# (work 0.03 below none's; run 334's trace: the long user held back 36 times, 237 ms in 5 s,
# while the small user was between its batches): none, share, share+window16 (held back
# only 16 ms ahead instead of 4). Interleaved, two passes (--rotate 0, 1), 6 s.
#   run(command="bash .gpu/run335.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o335; mkdir -p $O
save() { tar czf $OUT/o335.tgz -C /tmp o335; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
left() { echo $((560 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
for i in 1 2; do
  [ $(left) -lt 130 ] && { echo "pass $i a skipped"; break; }
  timeout $(left) python3 benchmarks/fairness.py $F --rotate $((i - 1)) \
    --policies none,share,share+aheadalone,share+deeplead0,share+grain4000 \
    --scenarios interactive+2048 --json $O/a$i.json > $O/a$i.txt 2>&1
  echo "pass $i a rc $? $(date +%T)"; save
  grep -E "^interactive\+2048 " $O/a$i.txt | cut -c1-120
  [ $(left) -lt 80 ] && { echo "pass $i b skipped"; break; }
  timeout $(left) python3 benchmarks/fairness.py $F --rotate $((i - 1)) \
    --policies none,share,share+window16 \
    --scenarios sync-long-vs-small --json $O/b$i.json > $O/b$i.txt 2>&1
  echo "pass $i b rc $? $(date +%T)"; save
  grep -E "^sync-long-vs-small " $O/b$i.txt | cut -c1-120
done
echo "lost or malformed: $(cat $O/*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
