#!/bin/bash
# twenty-second session, run 103: the client's retrial of a stretch let go by its timing (2e92732) against the tree
# before it (e69125a), alternating on one machine: programs.py (every program, bitwise, their ratios) once each side;
# then fairness.py's interactive+2048 and dl-mix, none and share, two passes at 2e92732.
# Before: clean exports of HEAD into .gpu/clean and of e69125a into .gpu/base; run(command="bash .gpu/run103.sh", ...)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o103
for tree in base clean; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
for tree in base clean; do
  (cd .gpu/$tree; export PYTHONPATH=/tmp/site:$PWD
   timeout 120 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
     --json /tmp/o103/p-$tree.json > /tmp/o103/p-$tree.txt 2>&1
   echo "$tree $(cat REV) programs rc $? $(date +%T)"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|ipc:" /tmp/o103/p-$tree.txt | head -20)
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
for pass in 1 2; do
  timeout 150 python3 benchmarks/fairness.py --policies none,share --calibrate none \
    --scenarios interactive+2048,dl-mix --long 8192 --seconds 5 \
    --calibrate-seconds 2 --lead 2 --devices 0 --json /tmp/o103/f$pass.json > /tmp/o103/f$pass.txt 2>&1
  echo "fairness pass $pass rc $? $(date +%T)"
  grep -E "^(interactive\+2048|dl-mix) |i.s replays" /tmp/o103/f$pass.txt
done
tar czf $OUT/o103.tgz -C /tmp o103
echo "end $(date +%T)"
