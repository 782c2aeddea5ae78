#!/bin/bash
# forty-sixth session, run 280 (issue 50): the trailing downloads asked for from a stretch's
# second replay (the session's tree): the GPU tests of them, of downloads through graphs and of
# stretch replay against local CuPy; then all 256 unseen loops timed (unseen_speed.py), the standing.
#   run(command="bash .gpu/run280.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o280; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_downloads_streamed.py \
  tests/gpu_backend/test_downloads_replayed_corners.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_bad_stretch_input.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
(cd .gpu/new && echo "unseen $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 400 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|cannot run|in all" $O/us.txt)
tar czf $OUT/o280.tgz -C /tmp o280
echo "end $(date +%T)"
