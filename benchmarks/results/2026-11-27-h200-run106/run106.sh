#!/bin/bash
# twenty-fourth session, run 106: the fixes unseen_loops.py led to (3794e59, 462a9f5) on CuPy: unseen_loops.py
# against local CuPy, the GPU tests of the fixes and of the steady lane; then the steady lane on and off again,
# alternating, two passes (replay_sync.py's hot sync, held_loops.py's chain20), and programs.py.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run106.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o106
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json /tmp/o106/u.json > /tmp/o106/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, |no replay graphed" /tmp/o106/u.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_aliased_inputs.py tests/kernelproxy/test_replay_scalars_and_errors.py \
  tests/gpu_backend/test_steady_lane.py > /tmp/o106/t.txt 2>&1
echo "tests rc $?"; tail -3 /tmp/o106/t.txt
for pass in 1 2; do
  for lane in 1 0; do
    export GPUWB_STEADY_LANE=$lane
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o106/r-$pass-$lane.json > /tmp/o106/r-$pass-$lane.txt 2>&1
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o106/h-$pass-$lane.json > /tmp/o106/h-$pass-$lane.txt 2>&1
    python3 - /tmp/o106/r-$pass-$lane.json /tmp/o106/h-$pass-$lane.json $pass $lane <<'PY'
import json, sys
r, h = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
hs = r["loops"]["hot_sync"]
c = h["loops"]["chain20"]["sides"]
st = (h.get("stretches") or {}).get("ipc", {})
print(f"pass {sys.argv[3]} lane {sys.argv[4]}: hot sync {hs['ipc']['us']:.1f} us (local {hs['local']['us']:.1f}, raw {r['raw_rtt_us']:.1f}, "
      f"target {r['hot_sync_target_us']:.1f}); chain20 {c['proxy_ipc']['iteration_us']:.1f} us vs local {c['local']['iteration_us']:.1f} "
      f"= {c['proxy_ipc']['iteration_vs_local']:.3f}x, worker {c['proxy_ipc']['worker_us_per_iteration']:.1f}, op {c['proxy_ipc']['issue_us_per_op']:.2f}; "
      f"lane {st.get('lane')} of {st.get('replays')}")
PY
  done
done
unset GPUWB_STEADY_LANE
echo "programs $(date +%T)"
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --json /tmp/o106/p.json > /tmp/o106/p.txt 2>&1
grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o106/p.txt | head -22
tar czf $OUT/o106.tgz -C /tmp o106
echo "end $(date +%T)"
