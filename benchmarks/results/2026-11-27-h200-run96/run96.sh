#!/bin/bash
# twenty-first session, run 96: issue 51, run 95 again at the tree with Pacer.begin_ahead (a run ahead begins only where it waits for nothing;
# run 95 measured 28faef8, whose run ahead could wait for a grant): none beside share, two passes in one call.
# run(command="bash .gpu/run96.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o96
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in ${PASSES:-1 2}; do
  timeout 200 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios interactive+2048,interactive+1,dl-mix,sync-long-vs-small --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o96/f$pass.json > /tmp/o96/f$pass.txt 2>&1
  echo "pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o96/f$pass.txt | head -3
  grep -E "^(interactive\+2048|interactive\+1|dl-mix|sync-long-vs-small) " /tmp/o96/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
try:
    p = json.load(open(f"/tmp/o96/f{sys.argv[1]}.json"))["policies"]
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
tar czf $OUT/o96.tgz -C /tmp o96
echo "end $(date +%T)"
