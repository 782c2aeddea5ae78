#!/bin/bash
# thirty-fifth session, run 197 (issue 50): do the graphs' own copies of eager results pay on a
# GPU? The drawing programs at 1dbc941 ("mark": the refused draw marked, copies apart as before)
# against HEAD ("rows": inputs and eager results gathered by the graphs' copy tables),
# alternating mark rows rows mark mark rows, five rounds a call; the worker's ms a run.
#   run(command="bash .gpu/run197.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o197; mkdir -p $O
for tree in mark rows; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=mc_option,monte_carlo_pi,random_walk,langevin_annealed
i=0
for tree in mark rows rows mark mark rows; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 5 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s.get(k) for k in ('ahead','lane','pushed','copied')}); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o197.tgz -C /tmp o197
echo "end $(date +%T)"
