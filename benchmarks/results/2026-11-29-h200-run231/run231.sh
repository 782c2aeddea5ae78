#!/bin/bash
# thirty-ninth session, run 231 (issue 50): the read slots' blocks kept apart from CuPy's
# pinned pool (after the review): the lane's GPU tests with its reads and the blocks' own,
# and the worker phases of the hot sync and chain20 (lane_slot_reads).
#   run(command="bash .gpu/run231.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o231; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_lane_reads.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_deferred_reads.py tests/kernelproxy/test_objects_gone.py tests/gpu_backend/test_run_ahead.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
timeout 60 python3 benchmarks/program_phases.py --devices 0 --rounds 3 --programs hot_sync,chain20 --top 12 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $? $(date +%T)"; grep -E "^(hot_sync|chain20)" $O/w.txt | cut -c1-400; grep -o '"lane_slot_reads": [0-9]*' $O/w.json
cd ../..
tar czf $OUT/o231.tgz -C /tmp o231
echo "end $(date +%T)"
