#!/bin/bash
# thirty-third session, run 183 (issue 50): the final commit (a run ahead whose guessed values a
# baked graph would not keep is not run) against local CuPy: the stretch-replay, call-scalars
# and draws-ahead tests, and the drawing and call-scalars campaigns.
#   run(command="bash .gpu/run183.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o183; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_call_scalars_as_params.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_graphed_draws import PROGRAMS as A; from unseen_loop_bodies_call_scalars import PROGRAMS as B; print(','.join(list(A)+list(B)))")
timeout 80 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, " $O/u.txt | cut -c1-200; grep -c Traceback $O/u.txt
cd ../..
tar czf $OUT/o183.tgz -C /tmp o183
echo "end $(date +%T)"
