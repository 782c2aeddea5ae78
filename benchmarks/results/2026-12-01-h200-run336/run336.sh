#!/bin/bash
# fifty-eighth session, run 336 (issue 51): does an idle notebook's open session cost the
# user beside it? Every session attached to a device is company (arbiter/service.py,
# _company_changed), and with company a worker is paced at its lead with markers at the
# 1 ms grain and says idle and want at its reads. alone-2048+idle and alone-sync+idle (new:
# the user beside a session that ran one op and sits open) against alone-2048 and
# alone-sync, and interactive+2048 in the same run, none and share interleaved, one pass of
# 6 s (the session's last ~300 s of device time).
#   run(command="bash .gpu/run336.sh", carry=[".whl", ".gpu"], timeout_s=290)
set -u
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o336; mkdir -p $O
save() { tar czf $OUT/o336.tgz -C /tmp o336; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 225 python3 benchmarks/fairness.py --policies none,share --calibrate none --interleave \
  --scenarios alone-2048+idle,alone-2048,alone-sync+idle,alone-sync,interactive+2048 \
  --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w1.json > $O/w1.txt 2>&1
echo "rc $? $(date +%T)"; save
grep -E "^(alone-|interactive\+2048 )" $O/w1.txt | cut -c1-120
python3 -c "
import json; r = json.load(open('$O/w1.json'))
for p, by in r['policies'].items():
    for n, s in by.items(): print(p, n, {u: round(v, 3) for u, v in s['normalised_rates'].items()})"
echo "lost or malformed: $(cat $O/w*.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
