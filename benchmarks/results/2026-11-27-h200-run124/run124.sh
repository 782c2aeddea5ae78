#!/bin/bash
# twenty-sixth session, run 124 (random draws run ahead, the journal's checks made cheaper):
# programs.py's drawing programs with draws ahead on and off, two calls with the sides in both
# orders; then every program of programs.py with the defaults (the standing at this commit).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run124.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o124
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
n=0
for sides in ipc,ipc-nodraws ipc-nodraws,ipc ipc,ipc-nodraws; do
  n=$((n+1))
  timeout 120 python3 benchmarks/programs.py --rounds 5 --own-pools --transports $sides --devices 0 --policy share \
    --programs random_walk,monte_carlo_pi,mc_option --json /tmp/o124/ab$n.json > /tmp/o124/ab$n.txt 2>&1
  echo "A/B $n ($sides) rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|bitwise equal" /tmp/o124/ab$n.txt | head -6
done
timeout 300 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --json /tmp/o124/p.json > /tmp/o124/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o124/p.txt | head -24
tar czf $OUT/o124.tgz -C /tmp o124
echo "end $(date +%T)"
