#!/bin/bash
# fifty-fourth session, run 318. (1) CuPy's test_default_memory_pool_threaded[False] timed
# out (120 s) through the proxy in run 317, where it passed in run 21 (2026-11-23): its
# shape (8 threads allocating with cupy.cuda.alloc, cycles left to the collector;
# mt_repro.py) timed for the tree of 2026-11-23 (425b5674) and today's, 150 iterations a
# thread, then today's at the test's 500; (2) run 316's curated programs were slower than
# run 314's on the loops that sync every step (hot sync 3.70x local against 1.80x): run
# 314's tree (7bd5880, "old") against today's ("new"), calls old new new old.
#   run(command="bash .gpu/run318.sh", carry=[".whl", ".gpu"])
set -u
(cd .gpu && tar xzf new.tgz && tar xzf old.tgz && tar xzf t23.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o318; mkdir -p $O
save() { tar czf $OUT/o318.tgz -C /tmp o318; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
for t in new old; do (cd .gpu/$t && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null); done
G=$PWD/.gpu
for t in t23 new; do
  echo "mt $t 150 $(date +%T)"
  (cd $G/$t && TREE=$PWD DEV=0 DUMP_AFTER=95 PYTHONPATH=/tmp/site timeout 100 python3 $G/mt_repro.py 150 8 > $O/mt-$t-150.txt 2>&1; echo "rc $?"; tail -2 $O/mt-$t-150.txt)
done
echo "mt new 500 $(date +%T)"
(cd $G/new && TREE=$PWD DEV=0 DUMP_AFTER=125 PYTHONPATH=/tmp/site timeout 130 python3 $G/mt_repro.py 500 8 > $O/mt-new-500.txt 2>&1; echo "rc $?"; tail -2 $O/mt-new-500.txt | cut -c1-200)
save
P=hot_sync,random_walk,langevin_annealed,monte_carlo_pi,bootstrap_rng,chain20,mc_option
i=0
for t in old new new old; do
  i=$((i+1)); echo "programs $i $t $(date +%T)"
  (cd $G/$t && PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/programs.py --programs $P --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p-$i-$t.json > $O/p-$i-$t.txt 2>&1; echo "rc $?")
  save; grep -E "^(hot_sync|random_walk|langevin|monte_carlo_pi |chain20|mc_option|bootstrap)" $O/p-$i-$t.txt | cut -c1-80
done
echo "end $(date +%T)"
