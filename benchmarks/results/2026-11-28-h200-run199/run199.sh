#!/bin/bash
# thirty-fifth session, run 199 (issue 50): the second review's fixes (4e5a4fc: a replay failing before an eager result is written, an eager op returning a graph's buffer, output=), and the first's (57dba7b: an eager result a later
# eager op names copied at once; an eager result written after handed out from the graphs'
# buffer) against local CuPy: the tests of stretch replay, draws ahead, the steady lane, run
# ahead and pushed replies; the seventh campaign (14 loops) and the draws campaigns bitwise.
#   run(command="bash .gpu/run199.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o199; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_eager_rows import PROGRAMS as A; from unseen_loop_bodies_draws import PROGRAMS as B; from unseen_loop_bodies_graphed_draws import PROGRAMS as C; print(','.join(list(A)+list(B)+list(C)))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
grep -E "^rows_" $O/u.txt | tail -14 | cut -c1-130
cd ../..
tar czf $OUT/o199.tgz -C /tmp o199
echo "end $(date +%T)"
