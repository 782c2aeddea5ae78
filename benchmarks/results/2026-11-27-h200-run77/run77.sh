#!/bin/bash
# nineteenth session, run 77 (an H200 came): where issues 50 and 51 stand at 40ec73e (the defaults, no change measured): one tree,
# call A (this script with A): replay_sync.py's hot sync, held_loops.py's chain20 and heat2d, graph_api.py, every
# program of programs.py; call B (with B): fairness.py, none / fair / share side by side, every scenario issue 51 names.
# Before the calls, here: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run77.sh A", carry=[".whl", ".gpu"]), then the same with B on the same warm machine
set -u
part=${1:-A}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o77
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) part $part $(date +%T)"
if [ $part = A ]; then
  for pass in 1 2; do
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o77/r-$pass.json > /tmp/o77/r-$pass.txt 2>&1
    grep -E "^(hot_sync|raw)|target" /tmp/o77/r-$pass.txt | head -3
    timeout 90 python3 benchmarks/held_loops.py --loops chain20,heat2d --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o77/h-$pass.json > /tmp/o77/h-$pass.txt 2>&1
    grep -E "^(local|proxy|chain20|heat2d)" /tmp/o77/h-$pass.txt | head -8
  done
  timeout 60 python3 benchmarks/graph_api.py --devices 0 --json /tmp/o77/g.json > /tmp/o77/g.txt 2>&1; tail -12 /tmp/o77/g.txt
  echo "programs $(date +%T)"
  timeout 300 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
    --json /tmp/o77/p.json > /tmp/o77/p.txt 2>&1
  grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|met|bitwise" /tmp/o77/p.txt | head -40
else
  timeout 570 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
    --scenarios sync-1:1,sync-1:2:4,three-1:2:4,sync-long-vs-small,long-vs-small,interactive+2048,dl-mix,alone-sync,alone-interactive \
    --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o77/f.json > /tmp/o77/f.txt 2>&1
  tail -60 /tmp/o77/f.txt
fi
tar czf $OUT/o77$part.tgz -C /tmp o77
echo "end $(date +%T)"
