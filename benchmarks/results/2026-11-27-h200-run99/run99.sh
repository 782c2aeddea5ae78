#!/bin/bash
# twenty-second session, run 99: issue 51, the interactive user's tail beside 2048² GEMMs under share (runs 97-98: p99
# 1.03-4.03 ms, none 2.13-3.20): interactive_beside.py beside a GEMM user (--busy gemm:2048) with share's defaults, the
# gap rule off, the run ahead beside others off and none, two passes; then fairness.py's interactive scenarios and
# sync-long-vs-small (none, share) in two passes, now with the interactive user's answers counted (from a run ahead,
# its read made at once).
# run(command="bash .gpu/run99.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o99
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2; do
  timeout 120 python3 benchmarks/interactive_beside.py --devices 0 --policy share --requests 300 --every-ms 10 --busy gemm:2048 \
    --sides default,GPUWB_READ_GAP_SHARE=0,GPUWB_RUN_AHEAD_BESIDE=0,policy=none --json /tmp/o99/ib$pass.json > /tmp/o99/ib$pass.txt 2>&1
  echo "interactive_beside pass $pass rc $? $(date +%T)"; grep -v "^ *[{}\"]" /tmp/o99/ib$pass.txt | head -12
done
for pass in 1 2; do
  timeout 240 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios interactive+2048,interactive+1,dl-mix,sync-long-vs-small --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o99/f$pass.json > /tmp/o99/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o99/f$pass.txt | head -3
  grep -E "^(interactive\+2048|interactive\+1|dl-mix|sync-long-vs-small) " /tmp/o99/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o99/f{sys.argv[1]}.json"))["policies"]
for pol in p:
    for sc, v in p[pol].items():
        if isinstance(v, dict) and "normalised_rates" in v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "interactive", json.dumps(v.get("stretches")))
PY
done
tar czf $OUT/o99.tgz -C /tmp o99
echo "end $(date +%T)"
