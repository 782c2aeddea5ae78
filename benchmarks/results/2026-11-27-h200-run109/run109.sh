#!/bin/bash
# twenty-fourth session, run 109: an early replay run ahead in the steady lane reading at once where its device time is
# at most 20 us (the default, GPUWB_LANE_EARLY_READ_US) against its reads when the client asks (=0), alternating on
# one machine, three passes: replay_sync.py's hot sync and held_loops.py's chain20 (both early replays).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run109.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o109
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for pass in 1 2 3; do
  for side in 20 0; do
    export GPUWB_LANE_EARLY_READ_US=$side
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o109/r-$pass-$side.json > /tmp/o109/r-$pass-$side.txt 2>&1
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o109/h-$pass-$side.json > /tmp/o109/h-$pass-$side.txt 2>&1
    python3 - /tmp/o109/r-$pass-$side.json /tmp/o109/h-$pass-$side.json $pass $side <<'PY'
import json, sys
r, h = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
hs = r["loops"]["hot_sync"]
c = h["loops"]["chain20"]["sides"]
st = (h.get("stretches") or {}).get("ipc", {})
print(f"pass {sys.argv[3]} early-read {sys.argv[4]} us: hot sync {hs['ipc']['us']:.1f} us (worker {hs['ipc']['worker_us']:.1f}; local {hs['local']['us']:.1f}, raw {r['raw_rtt_us']:.1f}, "
      f"target {r['hot_sync_target_us']:.1f}); chain20 {c['proxy_ipc']['iteration_us']:.1f} us vs local {c['local']['iteration_us']:.1f} "
      f"= {c['proxy_ipc']['iteration_vs_local']:.3f}x, worker {c['proxy_ipc']['worker_us_per_iteration']:.1f}; "
      f"lane {st.get('lane')} of {st.get('replays')}, read at once {st.get('ahead_read')}")
PY
  done
done
tar czf $OUT/o109.tgz -C /tmp o109
echo "end $(date +%T)"
