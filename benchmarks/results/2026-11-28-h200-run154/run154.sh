#!/bin/bash
# thirty-first session, run 154 (issue 50). Two things:
# 1. run 153's (never run): the float guess's and the lane's float tests against local CuPy;
#    replay_sync.py's time_step and hot sync, prev (5d92508) clean clean prev.
# 2. where a reply's sendmsg goes (run 151: 145 µs a call in logistic regression). A diag tree
#    (clean + sched_patch.py) logs each reply's send (its time, duration, CPU before and after)
#    and each client read (time, CPU); programs.py's logistic_regression, hot_sync, chain20 and
#    kmeans, ipc vs local, in three placements: free (today), worker pinned to CPU 8 with the
#    client free, worker on 8 and the client (with its pool) on 2-5.
#   run(command="bash .gpu/run154.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc; lscpu | grep -E "^(Model name|Socket|Core|Thread|L3|NUMA node0)"; uname -r
cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null
O=/tmp/o154; mkdir -p $O
for tree in clean prev diag; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 60 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_steady_lane.py -k "float or time_stepped or stepping_scalar or hot_sync" > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6
SCRIPT=$PWD/.gpu/clean/benchmarks/replay_sync.py
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 25 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops time_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(time_step|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
done
pin() { python3 -c "import os,sys; os.sched_setaffinity(0, set(map(int, sys.argv[1].split(',')))); os.execvp(sys.argv[2], sys.argv[2:])" "$@"; }
cd .gpu/diag && export PYTHONPATH=/tmp/site:$PWD
for place in free worker8 split; do
  D=$O/sched-$place; mkdir -p $D
  case $place in
    free) W=; C=0-$(($(nproc)-1)) ;;
    worker8) W=8; C=0-$(($(nproc)-1)) ;;
    split) W=8; C=2,3,4,5 ;;
  esac
  CPUS=$(python3 -c "import sys; a,_,b=sys.argv[1].partition('-'); print(','.join(map(str, range(int(a), int(b)+1))) if b else a)" $C)
  GPUWB_DIAG_DIR=$D GPUWB_DIAG_PIN=$W pin $CPUS timeout 150 python3 benchmarks/programs.py --devices 0 --transports ipc --rounds 3 \
    --programs logistic_regression,hot_sync,chain20,kmeans --json $D/p.json > $D/p.txt 2>&1
  echo "programs $place rc $? $(date +%T)"; grep -E "^(logistic|hot|chain|kmeans)" $D/p.txt | cut -c1-120
  python3 ../../benchmarks/results/2026-11-28-h200-run154/sched_read.py $D 2>&1 | cut -c1-220
done
cd ../..
tar czf $OUT/o154.tgz -C /tmp o154
echo "end $(date +%T)"
