#!/bin/bash
# twenty-second session, run 102: the session's end state on a GPU: the run-ahead and replay-estimate GPU tests on CuPy
# (the pacer now learns replays while tracing), interactive_beside beside 2048² GEMMs (share against none), and
# fairness.py's interactive scenarios, dl-mix, syncing 1:2:4 and sync-long-vs-small, none and share, two passes.
# run(command="bash .gpu/run102.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o102
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider \
  tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_beside.py \
  tests/gpu_backend/test_read_gaps.py tests/gpu_backend/test_replay_estimate.py > /tmp/o102/tests.txt 2>&1
echo "tests rc $? $(date +%T)"; tail -3 /tmp/o102/tests.txt
timeout 90 python3 benchmarks/interactive_beside.py --devices 0 --policy share --requests 300 --every-ms 10 --busy gemm:2048 \
  --sides default,policy=none --json /tmp/o102/ib.json > /tmp/o102/ib.txt 2>&1
echo "interactive_beside rc $? $(date +%T)"; grep -v "^ *[{}\"]" /tmp/o102/ib.txt | head -6
for pass in 1 2; do
  timeout 230 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios interactive+2048,interactive+1,dl-mix,sync-1:2:4,sync-long-vs-small --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o102/f$pass.json > /tmp/o102/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -i "Traceback\|Error" /tmp/o102/f$pass.txt | head -3
  grep -E "^(interactive\+2048|interactive\+1|dl-mix|sync-1:2:4|sync-long-vs-small) " /tmp/o102/f$pass.txt
  python3 - $pass <<'PY'
import json, sys
p = json.load(open(f"/tmp/o102/f{sys.argv[1]}.json"))["policies"]
for pol in p:
    for sc, v in p[pol].items():
        if isinstance(v, dict) and "normalised_rates" in v:
            r = v.get("normalised_rates") or {}
            print(sc, pol, " / ".join(f"{x:.3f}" for x in r.values()), "work", round(v.get("work_conservation") or 0, 3),
                  "err1s", json.dumps(v.get("share_error_1s")), "interactive", json.dumps(v.get("stretches")))
PY
done
tar czf $OUT/o102.tgz -C /tmp o102
echo "end $(date +%T)"
