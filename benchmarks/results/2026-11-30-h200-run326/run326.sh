#!/bin/bash
# fifty-sixth session, run 326 (issue 51). Run 325, the first pass of interactive+2048 since
# paced replays are kept held (f 2), gave share's work 0.935 against none's 0.972 and the
# interactive p99 1.22x none's, where run 320 (replies as before) gave 0.984 against 0.976.
# Is it the change? none, share and share+pacedstale (the old replies) side by side on
# interactive+2048, sync-long-vs-small and dl-mix, 8 s, two passes.
#   run(command="bash .gpu/run326.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o326; mkdir -p $O
save() { tar czf $OUT/o326.tgz -C /tmp o326; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2; do
  LEFT=$((540 - ($(date +%s) - T0)))
  [ $LEFT -lt 120 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  P=none,share,share+pacedstale
  [ $i = 2 ] && P=share+pacedstale,share,none
  timeout $LEFT python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios interactive+2048,sync-long-vs-small,dl-mix --long 8192 --seconds 8 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(interactive\+2048|sync-long-vs-small|dl-mix) " $O/w$i.txt | cut -c1-130
  grep -E "\(51\) (work|interactive p99|trainer)" $O/w$i.txt | cut -c1-110
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
