#!/bin/bash
# twentieth session, run 92: issue 51 at HEAD (the lease refinements ec82d1b and 18cedad, unmeasured on a GPU): share beside none,
# every scenario issue 51 names, one pass a call (run 90 measured bdb6362):

# run(command="bash .gpu/run92.sh 1", carry=[".whl", ".gpu"]), then "... 2" on the same warm machine.
set -u
pass=${1:-1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o92
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) pass $pass $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios long-vs-small,sync-long-vs-small,interactive+2048,dl-mix,sync-1:2:4,sync-1:1,three-1:2:4 \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o92/f$pass.json > /tmp/o92/f$pass.txt 2>&1
grep -i "Traceback\|Error" /tmp/o92/f$pass.txt | head -5
python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o92/f{sys.argv[1]}.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            e = v.get("share_error_1s") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "err", round(e.get("mean") or 0, 3), round(e.get("p99") or 0, 3))
PY
tar czf $OUT/o92-$pass.tgz -C /tmp o92
echo "end $(date +%T)"
