#!/bin/bash
# forty-fifth session, run 274 (issue 50): a download closing a held stretch served through its
# graphs and run ahead (de445ab), beside the rounds of up to eight messages: its GPU tests,
# the lane's turns, run ahead, staging and pushes against local CuPy; the unseen loops timed
# again (unseen_speed.py); one standing call of programs.py.
#   run(command="bash .gpu/run274.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o274; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 170 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_staging.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
(cd .gpu/new && echo "unseen $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 400 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/us.txt | sed -n '/^program /,$p' | head -30 | cut -c1-150; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|cannot run|in all" $O/us.txt)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 130 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p1.json > $O/p1.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p1.txt | cut -c1-110)
tar czf $OUT/o274.tgz -C /tmp o274
echo "end $(date +%T)"
