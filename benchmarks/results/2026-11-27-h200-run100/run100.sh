#!/bin/bash
# twenty-second session, run 100: where issues 50 and 51 stand at HEAD (the defaults; since run 77 the lease refinements, run ahead beside others, reads in the gaps), one tree,
# call A (this script with A): replay_sync.py's hot sync, held_loops.py's chain20 and heat2d, graph_api.py, every
# program of programs.py; call B (with B): fairness.py, none / share side by side, every scenario issue 51 names.
# Before the calls, here: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run100.sh A", carry=[".whl", ".gpu"]), then the same with B on the same warm machine
set -u
part=${1:-A}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o100
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) part $part $(date +%T)"
if [ $part = A ]; then
  for pass in 1 2; do
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o100/r-$pass.json > /tmp/o100/r-$pass.txt 2>&1
    grep -E "^(hot_sync|raw)|target" /tmp/o100/r-$pass.txt | head -3
    timeout 90 python3 benchmarks/held_loops.py --loops chain20,heat2d --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o100/h-$pass.json > /tmp/o100/h-$pass.txt 2>&1
    grep -E "^(local|proxy|chain20|heat2d)" /tmp/o100/h-$pass.txt | head -8
  done
  timeout 60 python3 benchmarks/graph_api.py --devices 0 --json /tmp/o100/g.json > /tmp/o100/g.txt 2>&1; tail -12 /tmp/o100/g.txt
  echo "programs $(date +%T)"
  timeout 300 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
    --json /tmp/o100/p.json > /tmp/o100/p.txt 2>&1
  grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|met|bitwise" /tmp/o100/p.txt | head -40
else
  timeout 590 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios sync-1:1,sync-1:2:4,three-1:2:4,sync-long-vs-small,long-vs-small,interactive+2048,dl-mix,alone-sync,alone-interactive \
    --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o100/f.json > /tmp/o100/f.txt 2>&1
  grep -E "^(sync|three|long|interactive|dl-mix|alone)" /tmp/o100/f.txt | head -40; grep -E "i.s replays|MISSED|met" /tmp/o100/f.txt | head -60
fi
tar czf $OUT/o100$part.tgz -C /tmp o100
echo "end $(date +%T)"
