#!/bin/bash
# twentieth session, run 88 (an H100): issue 51, light users on another host type, at 9663ec9 where they are the default: share (light users)
# beside share+lightgap0 (the rule before) and none, one pass, 5 s scenarios:
# run(command="bash .gpu/run88.sh 1", carry=[".whl", ".gpu"]), kind nvidia-h100-x1.
set -u
pass=${1:-1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o88
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) pass $pass $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share+lightgap0,share --calibrate none \
  --scenarios interactive+2048,dl-mix,sync-1:2:4,sync-1:1,three-1:2:4,long-vs-small \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o88/f$pass.json > /tmp/o88/f$pass.txt 2>&1
grep -A24 "^scenario " /tmp/o88/f$pass.txt | head -25
python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o88/f{sys.argv[1]}.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            e = v.get("share_error_1s") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "err", round(e.get("mean") or 0, 3), round(e.get("p99") or 0, 3))
PY
tar czf $OUT/o88-$pass.tgz -C /tmp o88
echo "end $(date +%T)"
