#!/bin/bash
# thirty-fourth session, run 185 (issue 50): moving slices, a getitem given its offered run's
# very index taken at once by the template (a stencil's constant slices as cheap as literals:
# on the VM the new tree had cost 57.5 against 41.9 us a stencil step before it). The tree
# before the session (9c65090, given the new programs' files) against the new in alternating
# calls (old new new old) for the programs with slices; then the standing: every program of
# programs.py beside local CuPy in one call, and replay_sync.py's loops.
#   run(command="bash .gpu/run185.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o185; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=stencil,heat2d,heat2d_2048,wave_no_sync,chain20,sgd_slices
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "standing rev $(cat REV) $(date +%T)"
timeout 230 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
timeout 120 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -30 | cut -c1-150
cd ../..
tar czf $OUT/o185.tgz -C /tmp o185
echo "end $(date +%T)"
