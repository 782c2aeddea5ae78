#!/bin/bash
# fifty-sixth session, run 328 (issue 51). Beside a light interactive user, share's
# saturating 2048² user ran 0.026-0.053 below none's rate in runs 325-327 (paced replays
# or not: run 327). Where does it go? One traced pass of none and share on interactive+2048
# (GPUWB_PACING_TRACE: the workers' pacing traces and the arbiter's decisions kept), 6 s;
# then the unseen loop scans_and_joins (its take's indices now wrapped or clipped by itself)
# against local CuPy.
#   run(command="bash .gpu/run328.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o328; mkdir -p $O
save() { tar czf $OUT/o328.tgz -C /tmp o328; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
mkdir -p $O/tr
GPUWB_PACING_TRACE=$O/tr timeout 150 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios interactive+2048 --long 8192 --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 \
  --json $O/t.json > $O/t.txt 2>&1
echo "traced rc $? $(date +%T)"
(cd $O/tr && tar czf $O/traces.tgz . && ls -la)
rm -rf $O/tr; save
grep -E "^interactive\+2048 |replays|\(51\)" $O/t.txt | cut -c1-200
python3 - $O/t.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for policy, by in d["policies"].items():
    r = by["interactive+2048"]
    print(policy, "trace:", json.dumps(r.get("trace"))[:900])
    print(policy, "arrivals:", json.dumps(r.get("arrivals"))[:400])
PY
timeout 120 python3 benchmarks/unseen_loops.py --programs scans_and_joins --devices auto --local cupy \
  --json $O/u.json > $O/u.txt 2>&1
echo "unseen rc $? $(date +%T)"; save
grep -E "equal|problems|raised" $O/u.txt | head -12
echo "lost or malformed: $(cat $O/t.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
