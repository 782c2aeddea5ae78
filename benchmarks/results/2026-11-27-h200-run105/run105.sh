#!/bin/bash
# twenty-fourth session, run 105: the steady lane after its learn fix (f0daee5), on and off alternating on one
# machine, three passes: replay_sync.py's hot sync and held_loops.py's chain20 (the lane's counts printed); then
# programs.py (the defaults); then fairness.py, none / share, the scenarios of users not seen before (mixed-1:2:4,
# many-sync, interactive+syncs) and interactive+2048.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run105.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o105
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2 3; do
  for lane in 1 0; do
    export GPUWB_STEADY_LANE=$lane
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o105/r-$pass-$lane.json > /tmp/o105/r-$pass-$lane.txt 2>&1
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o105/h-$pass-$lane.json > /tmp/o105/h-$pass-$lane.txt 2>&1
    python3 - /tmp/o105/r-$pass-$lane.json /tmp/o105/h-$pass-$lane.json $pass $lane <<'PY'
import json, sys
r, h = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
hs = r["loops"]["hot_sync"] if "loops" in r else r["rows"]["hot_sync"]
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
  --json /tmp/o105/p.json > /tmp/o105/p.txt 2>&1
grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o105/p.txt | head -22
echo "fairness $(date +%T)"
timeout 260 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios mixed-1:2:4,many-sync,interactive+syncs,interactive+2048 --long 8192 --seconds 5 \
  --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o105/f.json > /tmp/o105/f.txt 2>&1
echo "fairness rc $?"
grep -E "^(mixed|many|interactive)|alone \(none\)|i.s replays" /tmp/o105/f.txt | head -20; grep -E "MISSED|met$" /tmp/o105/f.txt | head -40
tar czf $OUT/o105.tgz -C /tmp o105
echo "end $(date +%T)"
