#!/bin/bash
# thirty-third session, run 175 (issue 50): programs whose scalars change through calls
# (langevin_annealed: a RandomState's normal with an annealed scale; ista_continuation: a
# clip's threshold shrinking), the tree before the new rule (a5f34ec, given the new
# programs' files) against the new, in alternating calls (old new new old), each beside
# local CuPy; random_walk and chain20 as controls the rule does not touch.
#   run(command="bash .gpu/run175.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o175; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=langevin_annealed,ista_continuation,random_walk,chain20
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 110 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110; grep -E "replays of held" $O/p-$i-$tree.txt | cut -c1-200)
done
tar czf $OUT/o175.tgz -C /tmp o175
echo "end $(date +%T)"
