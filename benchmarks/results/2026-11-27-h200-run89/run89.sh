#!/bin/bash
# twentieth session, run 89: issue 51, why the small deep-queued user beside a long one gets less under share than under
# none: share beside share with no hold-back (window 1000 ms) and share with every lead at 64 ms, none beside, two passes
# of long vs small in one call. run(command="bash .gpu/run89.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o89
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 280 python3 benchmarks/fairness.py --policies none,share,share+window1000,share+deeplead64+sharelead64000 --calibrate none \
    --scenarios long-vs-small --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json /tmp/o89/f$pass.json > /tmp/o89/f$pass.txt 2>&1
  python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o89/f{sys.argv[1]}.json"))["policies"]
for pol in p:
    v = p[pol].get("long-vs-small")
    if v:
        print(sys.argv[1], pol, " / ".join(f"{x:.3f}" for x in v["normalised_rates"].values()), "work", round(v.get("work_conservation") or 0, 3),
              "charged", {k: round(x, 2) for k, x in (v.get("charged_s") or {}).items()})
PY
done
tar czf $OUT/o89.tgz -C /tmp o89
echo "end $(date +%T)"
