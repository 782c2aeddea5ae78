#!/bin/bash
# fifty-eighth session, run 334 (issue 51). Run 333 (interleaved, the deadline mended) put
# share's work below none's in interactive+2048 (0.936/0.946 against 0.995/0.997) and
# sync-long-vs-small (0.889/0.889 against 0.919/0.918), many-sync at -0.010. Passes 1-2: is
# it the silent assumption? none, share and share+nosilent interleaved on those three,
# --rotate 0 then 1. Pass 3: long-vs-small and dl-mix beside ~150 ms kernels (--long 16384),
# none and share interleaved (run 330 measured them before the deadline mend). Pass 4: the
# two work misses traced (GPUWB_PACING_TRACE: the workers' pacing and the arbiter's
# decisions), none and share, to see where share's idle time goes.
#   run(command="bash .gpu/run334.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
# (one 16384² float32 matrix is 1 GiB: run 330's first try died at the default 4 GiB a session)
export GPUWB_MEMORY_LIMIT=$((24 << 30))
O=/tmp/o334; mkdir -p $O
save() { tar czf $OUT/o334.tgz -C /tmp --exclude=o334/tr o334; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
left() { echo $((585 - ($(date +%s) - T0))); }
F="--calibrate none --interleave --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0"
for i in 1 2; do
  [ $(left) -lt 330 ] && { echo "pass $i skipped"; break; }
  timeout $(left) python3 benchmarks/fairness.py --policies none,share,share+nosilent $F \
    --rotate $((i - 1)) --scenarios interactive+2048,sync-long-vs-small,many-sync \
    --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(interactive\+2048|sync-long|many-sync) " $O/w$i.txt | cut -c1-120
done
if [ $(left) -ge 130 ]; then
  timeout $(left) python3 benchmarks/fairness.py --policies none,share $F --long 16384 \
    --scenarios long-vs-small,dl-mix --json $O/w3.json > $O/w3.txt 2>&1
  echo "pass 3 rc $? $(date +%T)"; save
  grep -E "^(long-vs-small|dl-mix) " $O/w3.txt | cut -c1-120
else echo "pass 3 skipped"; fi
if [ $(left) -ge 90 ]; then
  mkdir -p $O/tr
  GPUWB_PACING_TRACE=$O/tr timeout $(left) python3 benchmarks/fairness.py --policies none,share \
    $F --scenarios interactive+2048,sync-long-vs-small --seconds 4 \
    --json $O/w4.json > $O/w4.txt 2>&1
  echo "pass 4 rc $? $(date +%T)"; du -sh $O/tr; save; tar czf $OUT/tr334.tgz -C $O tr; ls -la $OUT
  grep -E "^(interactive\+2048|sync-long) " $O/w4.txt | cut -c1-120
else echo "pass 4 skipped"; fi
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
