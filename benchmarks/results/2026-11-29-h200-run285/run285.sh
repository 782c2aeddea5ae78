#!/bin/bash
# forty-sixth session, run 285 (issue 50): the session's last code (after the second review's
# mends): the GPU tests of trailing downloads and values, their lifetimes, downloads through
# graphs, stretch replay and malformed headers against local CuPy.
#   run(command="bash .gpu/run285.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o285; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_trailing_downloads_lifetimes.py tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_downloads_streamed.py \
  tests/gpu_backend/test_downloads_replayed_corners.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_bad_stretch_input.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
tar czf $OUT/o285.tgz -C /tmp o285
echo "end $(date +%T)"
