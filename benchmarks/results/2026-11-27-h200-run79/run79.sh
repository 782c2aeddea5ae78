#!/bin/bash
# nineteenth session, run 79: issue 51, the 16 ms lead of run 78 against the 4 ms default on every kind of user, two passes:
# none, share, share+sharelead16000; the tree of run 77 (40ec73e).
# run(command="bash .gpu/run79.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o79
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
timeout 280 python3 benchmarks/fairness.py --policies none,share,share+sharelead16000 --calibrate none \
  --scenarios sync-1:2:4,sync-1:1,interactive+2048,dl-mix,long-vs-small,three-1:2:4 --long 8192 --seconds 4 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o79/f$pass.json > /tmp/o79/f$pass.txt 2>&1
grep -A20 "^scenario " /tmp/o79/f$pass.txt | head -21
python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o79/f{sys.argv[1]}.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3))
PY
done
tar czf $OUT/o79.tgz -C /tmp o79
echo "end $(date +%T)"
