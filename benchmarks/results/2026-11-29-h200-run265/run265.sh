#!/bin/bash
# forty-third session, run 265 (issue 50): an upload captured in its graph (a memcpy node from a
# page-locked place) instead of made between two graphs. The GPU tests of held uploads,
# stretch replay and the lane against local CuPy; then replay_sync.py's minibatch_step and
# feed_step against the tree before it (b948b39, "old": uploads eager), old new new old.
#   run(command="bash .gpu/run265.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o265; mkdir -p $O
for tree in new old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 110 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_held_uploads.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_steady_lane.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 30 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc --loops minibatch_step,feed_step \
     --json $O/rs-$i-$tree.json > $O/rs-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(minibatch_step|feed_step)" $O/rs-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o265.tgz -C /tmp o265
echo "end $(date +%T)"
