#!/bin/bash
# fifty-sixth session, run 327 (issue 51). Beside an interactive user (light: it holds nobody
# back), share's saturating 2048² user ran 0.906-0.935 of its rate where none gave
# 0.948-0.973 (runs 325-326), with the paced replies kept held or not. Its replays (>= 4 ms)
# are re-run op by op, paced, beside anyone (SHARE_UNPACED_REPLAY, since run 14: for deep
# queues 1:2:4). What do paced replays cost and buy now? none, share, and share with replays
# never paced under 100 ms (share+pacedreplay100000), on interactive+2048, three-1:2:4 (deep
# queues, what the pacing was for) and dl-mix, 6 s, two passes in alternating order.
#   run(command="bash .gpu/run327.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o327; mkdir -p $O
save() { tar czf $OUT/o327.tgz -C /tmp o327; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2; do
  LEFT=$((400 - ($(date +%s) - T0)))
  [ $LEFT -lt 120 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  P=none,share,share+pacedreplay100000
  [ $i = 2 ] && P=share+pacedreplay100000,share,none
  timeout $LEFT python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios interactive+2048,three-1:2:4,dl-mix --long 8192 --seconds 6 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w$i.json > $O/w$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(interactive\+2048|three-1:2:4|dl-mix) " $O/w$i.txt | cut -c1-130
  grep -E "replays|\(51\) (work|interactive p99|trainer)" $O/w$i.txt | cut -c1-110
done
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
