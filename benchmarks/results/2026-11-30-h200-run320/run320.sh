#!/bin/bash
# fifty-fourth session, run 320 (issue 51): are the share errors missed in 5 s passes the
# policy's or the sample's? A 5 s pass gives each user ~4 one-second windows after the
# settle (p99 is then the largest of ~12); here sync-1:2:4 and many-sync run 15 s a
# scenario, three passes (calls), none beside share; then one 15 s pass of the two
# scenarios whose work is missed (sync-long-vs-small, interactive+2048).
#   run(command="bash .gpu/run320.sh", carry=[".whl", ".gpu"])
set -u
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o320; mkdir -p $O
save() { tar czf $OUT/o320.tgz -C /tmp o320; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for i in 1 2 3; do
  timeout 140 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios sync-1:2:4,many-sync --long 8192 --seconds 15 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f$i.json > $O/f$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(sync-1:2:4|many-sync) " $O/f$i.txt | cut -c1-110
done
timeout 140 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-long-vs-small,interactive+2048 --long 8192 --seconds 15 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w.json > $O/w.txt 2>&1
echo "work pass rc $? $(date +%T)"; save
grep -E "^(sync-long-vs-small|interactive\+2048) " $O/w.txt | cut -c1-130
echo "lost or malformed: $(cat $O/f*.txt $O/w.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
