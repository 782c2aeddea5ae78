#!/bin/bash
# twenty-first session, run 95: issue 51, a replay run ahead beside others under share (Pacer.may_run_ahead: a standing
# grant not told to stop; run 94 found the interactive user's requests under share waiting for the device where none
# answers them from a run ahead): share (now) beside share+aheadalone (as before) and none, on the scenarios with an
# interactive or syncing small user, two passes in one call.
# run(command="bash .gpu/run95.sh", carry=[".whl", ".gpu"]); a third pass: PASSES=3 bash .gpu/run95.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o95
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in ${PASSES:-1 2}; do
  timeout 270 python3 benchmarks/fairness.py --policies none,share+aheadalone,share --calibrate none \
    --scenarios interactive+2048,interactive+1,dl-mix,sync-long-vs-small --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o95/f$pass.json > /tmp/o95/f$pass.txt 2>&1
  echo "pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o95/f$pass.txt | head -3
  grep -E "^(interactive\+2048|interactive\+1|dl-mix|sync-long-vs-small) " /tmp/o95/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
try:
    p = json.load(open(f"/tmp/o95/f{sys.argv[1]}.json"))["policies"]
except Exception as exc:
    print("no json", exc); sys.exit(0)
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3))
PY
done
tar czf $OUT/o95.tgz -C /tmp o95
echo "end $(date +%T)"
