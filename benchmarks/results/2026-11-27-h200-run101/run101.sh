#!/bin/bash
# twenty-second session, run 101: issue 51, why dl-mix's long user gets 0.40-0.41 under share against none's 0.45-0.46
# (runs 97, 99) while the trainer gets 0.60: dl-mix under none and share with the workers' pacing traces and the
# arbiter's decisions kept (GPUWB_PACING_TRACE), two passes at d5bfe4f; the arbiter's virtual times kept for reading.
# run(command="bash .gpu/run101.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o101
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  GPUWB_PACING_TRACE=/tmp/o101/t$pass timeout 150 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios dl-mix --long 8192 --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 \
    --json /tmp/o101/f$pass.json > /tmp/o101/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -E "^dl-mix " /tmp/o101/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o101/f{sys.argv[1]}.json"))["policies"]
for pol in p:
    v = p[pol]["dl-mix"]
    print(pol, {k: v.get(k) for k in ("normalised_rates", "work_conservation", "charged_s", "busy")})
    print(pol, json.dumps(v.get("trace")))
PY
done
tar czf $OUT/o101.tgz -C /tmp o101
echo "end $(date +%T)"
