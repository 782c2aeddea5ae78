#!/bin/bash
# fifty-fifth session, run 324 (issue 51): the paced replays kept held (replies ``f`` 2,
# the default since run 323) against the old replies (share+pacedstale), unpriced, on the
# two scenarios whose one-second error is missed: run 323's one pass gave 0.017 / 0.071
# against 0.041 / 0.129 (sync-1:2:4) and 0.021 / 0.070 against 0.023 / 0.092 (many-sync);
# as many more passes of 8 s as the device time left allows (the session's last 278 s).
#   run(command="bash .gpu/run324.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o324; mkdir -p $O
save() { tar czf $OUT/o324.tgz -C /tmp o324; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2 3; do
  LEFT=$((215 - ($(date +%s) - T0)))
  [ $LEFT -lt 75 ] && { echo "pass $i skipped: $LEFT s left"; break; }
  timeout $LEFT python3 benchmarks/fairness.py --policies share+pacedstale,share+unpriced --calibrate none \
    --scenarios sync-1:2:4,many-sync --long 8192 --seconds 8 --calibrate-seconds 1 --lead 2 --devices 0 --json $O/f$i.json > $O/f$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(sync-1:2:4|many-sync) " $O/f$i.txt | cut -c1-110
done
echo "lost or malformed: $(cat $O/f*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
