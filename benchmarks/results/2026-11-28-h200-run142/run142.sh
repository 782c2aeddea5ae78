#!/bin/bash
# twenty-eighth session, run 142 (issue 50): pushed replies over early ones — a loop whose
# early replays the steady lane answers sends them whole once the lane says it would push
# their replies (reply L, kernelproxy/early_replay.py EarlyPlan.lane). The GPU tests of pushed
# replies, early replay and the lane against local CuPy; programs.py with the sides ipc (the
# new default) and ipc-earlyfirst (GPUWB_LANE_OVER_EARLY=0: early as before), the order given
# by $1 (ab: ipc first; ba: ipc-earlyfirst first), loss_and_accuracy (new: two reads a step)
# among them; with $2 = unseen, the first unseen-loop campaign against local CuPy.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run142.sh ab", carry=[".whl", ".gpu"])
set -u
ORDER=${1:-ab}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o142$ORDER; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
if [ "$ORDER" = ab ]; then
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
    tests/gpu_backend/test_pushed_replies.py tests/kernelproxy/test_early_replay.py tests/gpu_backend/test_steady_lane.py > $O/t.txt 2>&1
  echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
  SIDES=ipc,ipc-earlyfirst
else
  SIDES=ipc-earlyfirst,ipc
fi
timeout 330 python3 benchmarks/programs.py --rounds 3 --own-pools --transports $SIDES --devices 0 \
  --programs hot_sync,chain20,black_scholes,kmeans,conjugate_gradient,stencil,heat2d,loss_and_accuracy,logistic_regression,mlp_training \
  --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/p.txt | cut -c1-200 | head -30
if [ "${2:-}" = unseen ]; then
  part=unseen_loop_bodies
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 170 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $?"; grep -E "programs, |no replay" $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
fi
tar czf $OUT/o142$ORDER.tgz -C /tmp o142$ORDER
echo "end $(date +%T)"
