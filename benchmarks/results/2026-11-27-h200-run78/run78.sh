#!/bin/bash
# nineteenth session, run 78: issue 51, why share gives the small user beside a long one less than none does (run 77:
# 0.410 against 0.463): is its 4 ms lead too shallow to keep its context's time slices busy? long-vs-small and
# sync-long-vs-small under none, share, share with a 16 ms and a 64 ms lead, one call, the tree of run 77 (40ec73e).
# run(command="bash .gpu/run78.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o78
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 560 python3 benchmarks/fairness.py --policies none,share,share+sharelead16000,share+sharelead64000 --calibrate none \
  --scenarios long-vs-small,sync-long-vs-small,three-1:2:4 --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json /tmp/o78/f.json > /tmp/o78/f.txt 2>&1
grep -A16 "^scenario " /tmp/o78/f.txt | head -18
python3 - <<'PY'
import json
p = json.load(open("/tmp/o78/f.json"))["policies"]
for sc in p[next(iter(p))]:
    for pol in p:
        v = p[pol].get(sc)
        if v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3))
PY
tar czf $OUT/o78.tgz -C /tmp o78
echo "end $(date +%T)"
