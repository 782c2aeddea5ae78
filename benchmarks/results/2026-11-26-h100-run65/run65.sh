#!/bin/bash
# seventeenth session, run 65: issue 50, where a lone session's worker spends a hot sync and a chain20
# iteration on a GPU after 6a9332b: the worker under cProfile (GPUWB_WORKER_PROFILE), replay_sync.py's hot
# sync and held_loops.py's chain20 (share), the profiles brought back (tar) and their top functions printed.
# Before the call, here: the export of 6a9332b in .gpu/clean (run 63's); run(command="bash .gpu/run65.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
mkdir -p /tmp/prof/hot /tmp/prof/chain
GPUWB_WORKER_PROFILE=/tmp/prof/hot timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc \
  --loops hot_sync --devices 0 --policy share 2>&1 | grep -E "^(hot_sync|raw)"
GPUWB_WORKER_PROFILE=/tmp/prof/chain timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc \
  --devices 0 --policy share --iterations 1000 --rounds 1 2>&1 | grep -E "^(local |proxy)"
for kind in hot chain; do
  python3 - /tmp/prof/$kind <<'PY'
import glob, pstats, sys
best = max(glob.glob(sys.argv[1] + "/*.prof"), key=lambda f: pstats.Stats(f).total_calls)
s = pstats.Stats(best)
n = [v[1] for k, v in s.stats.items() if k[2] == "_serve_message"][0]
print(sys.argv[1], "messages", n, "calls a message", round(s.total_calls / n, 1))
rows = sorted(((v[3] / n * 1e6, v[2] / n * 1e6, v[1] / n, k[0].split("/")[-1] + ":" + str(k[1]) + ":" + k[2])
               for k, v in s.stats.items()), reverse=True)
print(" cum us  own us  calls  function (per message)")
for r in rows[:45]:
    print("%7.1f %7.1f %6.2f  %s" % r)
PY
done
tar czf $OUT/prof65.tgz -C /tmp prof
echo "end $(date +%T)"
