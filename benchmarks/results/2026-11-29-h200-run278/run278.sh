#!/bin/bash
# forty-sixth session, run 278 (issue 50): the review's mends on a GPU (2b52df3): the tests of
# downloads through graphs (streamed ones, the capture's copies outside its allocator), one
# stretch at several places of a round, NaN scalars, against local CuPy.
#   run(command="bash .gpu/run278.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o278; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_downloads_streamed.py tests/gpu_backend/test_downloads_replayed_corners.py \
  tests/gpu_backend/test_lane_places_scalars.py tests/gpu_backend/test_lane_places_draws.py tests/gpu_backend/test_lane_turns.py \
  tests/kernelproxy/test_nan_scalars_not_params.py tests/kernelproxy/test_nan_numpy_scalars_not_params.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
tar czf $OUT/o278.tgz -C /tmp o278
echo "end $(date +%T)"
