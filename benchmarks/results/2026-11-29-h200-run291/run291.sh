#!/bin/bash
# forty-seventh session, run 291 (issue 50): the session's last code: the GPU tests of calls
# of several results (the no-sync divmod test now compared with local CuPy), of the
# suites around them, of stretch replay and trailing downloads, against local CuPy; then
# replay_sync.py's masked_step, logged_step and hot_sync.
#   run(command="bash .gpu/run291.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o291; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_result_structures.py tests/kernelproxy/test_result_structures_edges.py tests/gpu_backend/test_aliased_inputs.py \
  tests/kernelproxy/test_diff_shapes.py tests/kernelproxy/test_diff_ufuncs_reductions.py tests/kernelproxy/test_newcomer_fidelity.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_trailing_downloads.py \
  tests/gpu_backend/test_never_graphed.py tests/kernelproxy/test_held_uploads.py tests/kernelproxy/test_loop_cuts.py \
  tests/kernelproxy/test_diff_scipy.py tests/kernelproxy/test_suite_gaps.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
(cd .gpu/new && echo "loops $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
   --loops masked_step,logged_step,hot_sync --json $O/l.json > $O/l.txt 2>&1; echo "rc $?"; grep -E "^(masked|logged|hot)" $O/l.txt | cut -c1-120)
tar czf $OUT/o291.tgz -C /tmp o291
echo "end $(date +%T)"
