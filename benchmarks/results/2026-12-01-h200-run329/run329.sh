#!/bin/bash
# fifty-sixth session, run 329 (issue 51). Run 328's traces: beside a light interactive
# user, share's saturating 2048² user launched 3 GEMMs between two markers (SHARE_GRAIN,
# 1 ms) against 30 under none, its GEMMs took 0.341 ms at the median against 0.333 (p90 0.374
# against 0.335), and it ran 0.952 against none's 0.971. Is it the grain? none, share, and
# share with 4 ms and 16 ms between markers (share+grain4000, share+grain16000), on
# interactive+2048 and sync-1:2:4 (whose charges come with the markers), 6 s, two passes in
# alternating order.
#   run(command="bash .gpu/run329.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o329; mkdir -p $O
save() { tar czf $OUT/o329.tgz -C /tmp o329; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2; do
  LEFT=$((400 - ($(date +%s) - T0)))
  [ $LEFT -lt 100 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  P=none,share,share+grain4000,share+grain16000
  [ $i = 2 ] && P=share+grain16000,share+grain4000,share,none
  timeout $LEFT python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios interactive+2048,sync-1:2:4 --long 8192 --seconds 6 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(interactive\+2048|sync-1:2:4) " $O/w$i.txt | cut -c1-130
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
