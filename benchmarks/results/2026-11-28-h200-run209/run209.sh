#!/bin/bash
# thirty-sixth session, run 209 (issue 50): did the session's change cost the programs that moved up
# in run 207's standing (SGD 1.98x against 1.34 in run 196)? The session's start (c1ee030, "old")
# against its code (fa63f37, "new"), alternating calls old new new old of programs.py.
#   run(command="bash .gpu/run209.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o209; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=sgd_minibatch,sgd_slices,loss_and_accuracy,nbody,heat2d_2048
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "rc $?"; grep -E "^[a-z_0-9]+ +[0-9]+ " $O/p-$i-$tree.txt | cut -c1-90
done
tar czf $OUT/o209.tgz -C /tmp o209
echo "end $(date +%T)"
