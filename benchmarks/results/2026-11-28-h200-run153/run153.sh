#!/bin/bash
# thirtieth session, run 153 (issue 50): a loop's float parameter guessed from its last values
# (worker/float_steps.py). .gpu/clean (this tree) and .gpu/prev (5d92508, the tree before):
# the float guess's and the lane's float tests against local CuPy; replay_sync.py's new
# time_step (t = i * 0.01) and the hot sync, prev clean clean prev. Short: the session's last
# device time. NOT RUN in the thirtieth session: its device time ran out (status: a fresh
# machine could not be started with 141 s left); for the next GPU session.
#   run(command="bash .gpu/run153.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o153; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 45 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_steady_lane.py -k "float or time_stepped or stepping_scalar or hot_sync" > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6
SCRIPT=$PWD/.gpu/clean/benchmarks/replay_sync.py
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 20 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops time_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(time_step|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
done
tar czf $OUT/o153.tgz -C /tmp o153
echo "end $(date +%T)"
