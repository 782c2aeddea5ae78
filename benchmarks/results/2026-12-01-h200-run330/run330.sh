#!/bin/bash
# fifty-seventh session, run 330 (issue 51). Is a silent session's part assumed
# (share+silent, GPUWB_SHARE_ASSUME_SILENT=1, off by default) free on a GPU, and does it help
# beside ops that cannot stop? none, share and share+silent on interactive+long, long-vs-small
# and dl-mix with the long GEMMs at 16384² float32 (one kernel of ~150 ms, --long 16384), and
# on sync-1:2:4 (whose reports come at the markers: nothing should change), 6 s, two passes
# in alternating order. The client's stretch figures (retrials never for good) come with
# dl-mix's interactive user.
#   run(command="bash .gpu/run330.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
# (one 16384² float32 matrix is 1 GiB: the first try of this run died at the default 4 GiB
# a session, out of memory in the calibration)
export GPUWB_MEMORY_LIMIT=$((24 << 30))
O=/tmp/o330; mkdir -p $O
save() { tar czf $OUT/o330.tgz -C /tmp o330; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2; do
  LEFT=$((575 - ($(date +%s) - T0)))
  [ $LEFT -lt 150 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  P=none,share,share+silent
  [ $i = 2 ] && P=share+silent,share,none
  timeout $LEFT python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios interactive+long,long-vs-small,dl-mix,sync-1:2:4 --long 16384 --seconds 6 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(interactive\+long|long-vs-small|dl-mix|sync-1:2:4) " $O/w$i.txt | cut -c1-140
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
