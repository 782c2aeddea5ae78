#!/bin/bash
# forty-third session, run 262 (issue 50): the lane's runs now after a review's three mends
# (accounting, arming). The GPU tests of held uploads, the lane, its turns, pushes and run
# ahead against local CuPy; then replay_sync.py's minibatch_step and feed_step, sides ipc and
# ipc-nolane (the lane off) in pools of their own, three calls.
#   run(command="bash .gpu/run262.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o262; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_lane_turns.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_lane_measures.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
for i in 1 2 3; do
  (cd .gpu/new && echo "call $i $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc,ipc-nolane --loops minibatch_step,feed_step \
     --json $O/rs-$i.json > $O/rs-$i.txt 2>&1; echo "rc $?"
   grep -E "^(minibatch_step|feed_step)" $O/rs-$i.txt | cut -c1-150)
done
tar czf $OUT/o262.tgz -C /tmp o262
echo "end $(date +%T)"
