#!/bin/bash
# thirty-first session, run 155 (issue 50): spinning waits that yield (3ab3443) against the
# tree before (bce2b43), both with run 154's send/read log (sched_patch.py), free placement,
# old new new old, and the new tree with the worker on CPU 8 and the client on 2-5 (run 154's
# best) as a reference. programs.py (eight programs, ipc vs local, three rounds) and
# replay_sync.py (hot sync, stencil, time_step).
#   run(command="bash .gpu/run155.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o155; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/old/REV) $(cat .gpu/new/REV) $(date +%T)"
pin() { python3 -c "import os,sys; os.sched_setaffinity(0, set(map(int, sys.argv[1].split(',')))); os.execvp(sys.argv[2], sys.argv[2:])" "$@"; }
ALL=$(python3 -c "import os; print(','.join(map(str, range(os.cpu_count()))))")
READ=$PWD/benchmarks/results/2026-11-28-h200-run154/sched_read.py
i=0
for run in old:free new:free new:split new:free old:free; do
  i=$((i+1)); tree=${run%%:*}; place=${run##*:}
  if [ $place = split ]; then W=8; C=2,3,4,5; else W=; C=$ALL; fi
  D=$O/$i-$tree-$place; mkdir -p $D
  (cd .gpu/$tree && export PYTHONPATH=/tmp/site:$PWD GPUWB_DIAG_DIR=$D GPUWB_DIAG_PIN=$W && \
    pin $C timeout 100 python3 benchmarks/programs.py --devices 0 --transports ipc --rounds 3 \
      --programs logistic_regression,hot_sync,chain20,kmeans,mlp_training,random_walk,conjugate_gradient,stencil \
      --json $D/p.json > $D/p.txt 2>&1; echo "programs $i $tree $place rc $? $(date +%T)"; \
    pin $C timeout 30 python3 benchmarks/replay_sync.py --devices 0 --reps 1000 --transports ipc \
      --loops hot_sync,stencil,time_step --json $D/r.json > $D/r.txt 2>&1; echo "replay_sync rc $? $(date +%T)")
  grep -E "^(logistic|hot|chain|kmeans|mlp|random|conj|stencil)" $D/p.txt | cut -c1-100
  grep -E "^(hot_sync|stencil|time_step|raw)" $D/r.txt | cut -c1-100
  python3 $READ $D 2>&1 | cut -c1-230
done
tar czf $OUT/o155.tgz -C /tmp o155
echo "end $(date +%T)"
