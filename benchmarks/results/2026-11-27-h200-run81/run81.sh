#!/bin/bash
# nineteenth session, run 81: issue 51, share with the heaviest users' sessions launching 16 ms deep
# (--share-deep-lead-ms 16, fairness.py's share+deeplead16) beside share (4 ms for all) and none, one pass a call:
# run(command="bash .gpu/run81.sh 1", carry=[".whl", ".gpu"]), then "... 2" on the same warm machine.
set -u
pass=${1:-1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o81
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) pass $pass $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share,share+deeplead16 --calibrate none \
  --scenarios sync-1:2:4,sync-1:1,interactive+2048,dl-mix,long-vs-small,three-1:2:4,sync-long-vs-small \
  --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o81/f$pass.json > /tmp/o81/f$pass.txt 2>&1
grep -A24 "^scenario " /tmp/o81/f$pass.txt | head -25
python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o81/f{sys.argv[1]}.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            e = v.get("share_error_1s") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "err", round(e.get("mean") or 0, 3), round(e.get("p99") or 0, 3))
PY
tar czf $OUT/o81-$pass.tgz -C /tmp o81
echo "end $(date +%T)"
