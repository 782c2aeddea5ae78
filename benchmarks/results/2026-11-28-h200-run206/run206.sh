#!/bin/bash
# thirty-sixth session, run 206 (issue 50): a measured run ahead learnt when answered (Pacer.harvested,
# a0e4a85, "new") against the tree before it (2f43c15, "old": deferred reads, the measurement left to the
# idle harvest), alternating calls of programs.py (--own-pools, sides ipc and ipc-nodefer: the reads
# deferred or made at once); the new tree's paths and declines (worker_phases.py).
#   run(command="bash .gpu/run206.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o206; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/worker_phases.py --devices 0 --rounds 5 \
  --programs mc_option,random_walk,monte_carlo_pi,bootstrap_rng,monte_carlo_pi_rng,langevin_annealed --top 14 --json $O/w.json > $O/w.txt 2>&1)
echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | cut -c1-700
P=mc_option,monte_carlo_pi,random_walk,langevin_annealed,bootstrap_rng,monte_carlo_pi_rng,chain20,heat2d,hot_sync,logistic_regression
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 110 python3 benchmarks/programs.py \
     --rounds 5 --own-pools --transports ipc,ipc-nodefer --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "rc $?"; grep -E "^[a-z_0-9]+ +[0-9]+ " $O/p-$i-$tree.txt | cut -c1-110
done
tar czf $OUT/o206.tgz -C /tmp o206
echo "end $(date +%T)"
