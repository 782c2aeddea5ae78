#!/bin/bash
# twenty-second session, run 98: issue 51, where sync-long-vs-small's work goes under share (run 97's second pass: the
# small syncing user 0.302 of its rate alone, work 0.822 against none's 0.988) and interactive+2048's p99 (4.03 ms against
# none's 2.53): fairness.py with the workers' pacing traces and the arbiter's decisions kept (GPUWB_PACING_TRACE), three
# passes of none and share at 1d52900.
# run(command="bash .gpu/run98.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o98
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
for pass in ${PASSES:-1 2 3}; do
  GPUWB_PACING_TRACE=/tmp/o98/t$pass timeout 150 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios sync-long-vs-small,interactive+2048 --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o98/f$pass.json > /tmp/o98/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o98/f$pass.txt | head -3
  grep -E "^(interactive\+2048|sync-long-vs-small) " /tmp/o98/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o98/f{sys.argv[1]}.json"))["policies"]
for pol in p:
    for sc, v in p[pol].items():
        if isinstance(v, dict) and "normalised_rates" in v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "trace", json.dumps({u: {k: (round(x, 4) if isinstance(x, float) else x) for k, x in t.items()}
                                       for u, t in (v.get("trace") or {}).items()}), "arrivals", json.dumps(v.get("arrivals")))
PY
done
tar czf $OUT/o98.tgz -C /tmp o98
echo "end $(date +%T)"
