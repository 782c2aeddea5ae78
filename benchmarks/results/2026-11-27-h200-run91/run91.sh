#!/bin/bash
# twenty-first session, run 91: issue 51, the session lost in long-vs-small (runs 86 and 89: its heartbeat answered
# "not alive" with no reason): long-vs-small under share and share+window1000 (where run 89 lost it) beside none, two
# passes in one call, the pool's log (the door's new note of such a heartbeat: ccffc01) kept with each pass.
# run(command="bash .gpu/run91.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o91
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 270 python3 benchmarks/fairness.py --policies none,share,share+window1000 --calibrate none \
    --scenarios long-vs-small --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json /tmp/o91/f$pass.json > /tmp/o91/f$pass.txt 2>&1
  echo "pass $pass rc $? $(date +%T)"
  grep -n "not alive\|SessionLost\|Traceback\|ended this session" /tmp/o91/f$pass.txt | head -8
  python3 - $pass <<'PY'
import json, sys
try:
    p = json.load(open(f"/tmp/o91/f{sys.argv[1]}.json"))["policies"]
except Exception as exc:
    print("no json", exc); sys.exit(0)
for pol in p:
    v = p[pol].get("long-vs-small")
    if v:
        print(sys.argv[1], pol, " / ".join(f"{x:.3f}" for x in v["normalised_rates"].values()), "work", round(v.get("work_conservation") or 0, 3))
PY
done
tar czf $OUT/o91.tgz -C /tmp o91
echo "end $(date +%T)"
