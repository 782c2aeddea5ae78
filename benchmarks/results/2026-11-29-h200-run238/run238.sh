#!/bin/bash
# fortieth session, run 238 (issue 50): where heat2d_2048's worker spends ~290 µs of CPU a
# message (run 237's phases: 437 µs a message, 144 of them waiting for the device): a
# cProfile of the session's worker (GPUWB_WORKER_PROFILE) over programs.py's heat2d_2048,
# and heat2d's beside it; the top functions by their own time.
#   run(command="bash .gpu/run238.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o238; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
for p in heat2d_2048 heat2d; do
  mkdir -p $O/prof-$p
  GPUWB_WORKER_PROFILE=$O/prof-$p timeout 60 python3 benchmarks/programs.py --rounds 2 --own-pools --transports ipc --devices 0 --programs $p > $O/p-$p.txt 2>&1
  echo "$p rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$p.txt | cut -c1-110
  sleep 2
  python3 - $O/prof-$p <<'PY'
import glob, pstats, sys
paths = sorted(glob.glob(sys.argv[1] + "/*.prof"), key=lambda p: -pstats.Stats(p).total_calls)
print(len(paths), "profiles")
if paths:
    s = pstats.Stats(paths[0]); s.sort_stats("tottime").print_stats(28)
PY
done 2>&1 | grep -v "^$" | cut -c1-160
tar czf $OUT/o238.tgz -C /tmp o238
