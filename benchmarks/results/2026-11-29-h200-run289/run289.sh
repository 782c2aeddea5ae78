#!/bin/bash
# forty-seventh session, run 289 (issue 50): the session's last code (calls of several
# results issued with no wait, a held stretch ended before such a call): its GPU tests and
# the suites around it against local CuPy, then the standing of the 256 unseen loops.
#   run(command="bash .gpu/run289.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o289; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 220 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_result_structures.py tests/gpu_backend/test_aliased_inputs.py tests/kernelproxy/test_diff_shapes.py \
  tests/kernelproxy/test_diff_ufuncs_reductions.py tests/kernelproxy/test_newcomer_fidelity.py tests/kernelproxy/test_stretch_fast_path.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_trailing_downloads.py tests/gpu_backend/test_never_graphed.py \
  tests/kernelproxy/test_held_uploads.py tests/kernelproxy/test_loop_cuts.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
(cd .gpu/new && echo "unseen $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 420 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|cannot run|in all" $O/us.txt)
tar czf $OUT/o289.tgz -C /tmp o289
echo "end $(date +%T)"
