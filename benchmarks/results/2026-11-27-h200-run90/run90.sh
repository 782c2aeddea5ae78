#!/bin/bash
# twentieth session, run 90: issue 51, a release's done (the commit after c572e28..., see REV): share (the worker says done
# after a standing grant's release with work running) beside share+nodone (counted off at the worker's estimate, as before)
# and none, every scenario issue 51 names, one pass a call:
# run(command="bash .gpu/run90.sh 1", carry=[".whl", ".gpu"]), then "... 2" on the same warm machine.
set -u
pass=${1:-1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o90
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) pass $pass $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share+nodone,share --calibrate none \
  --scenarios long-vs-small,sync-long-vs-small,interactive+2048,dl-mix,sync-1:2:4,sync-1:1,three-1:2:4 \
  --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o90/f$pass.json > /tmp/o90/f$pass.txt 2>&1
grep -i "Traceback\|Error" /tmp/o90/f$pass.txt | head -5
python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o90/f{sys.argv[1]}.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            e = v.get("share_error_1s") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "err", round(e.get("mean") or 0, 3), round(e.get("p99") or 0, 3))
PY
tar czf $OUT/o90-$pass.tgz -C /tmp o90
echo "end $(date +%T)"
