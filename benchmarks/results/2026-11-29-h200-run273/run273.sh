#!/bin/bash
# forty-fifth session, run 273 (issue 50): the steady lane serving rounds of up to eight
# messages, one stretch at two places of a round (a625854): the GPU tests of the lane's
# turns, pushes and run ahead against local CuPy; then the unseen loops timed again
# (unseen_speed.py, with each program's messages and replays an iteration and why).
#   run(command="bash .gpu/run273.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o273; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_run_ahead_turns.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_pushed_mixed.py tests/gpu_backend/test_lane_reads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
(cd .gpu/new && echo "unseen $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 400 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/us.txt | sed -n '/^program /,$p' | head -30 | cut -c1-150; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|cannot run|in all" $O/us.txt)
tar czf $OUT/o273.tgz -C /tmp o273
echo "end $(date +%T)"
