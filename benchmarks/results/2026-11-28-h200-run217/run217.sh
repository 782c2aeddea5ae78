#!/bin/bash
# thirty-seventh session, run 217 (issue 50): the session's end (kept_views.judge's cycle broken,
# a new object's loop of a released object's shape held from its first sighting) against local
# CuPy: the GPU tests; the campaigns with eager ops and draws, bitwise; the standing (every
# program, one call) and replay_sync.py.
#   run(command="bash .gpu/run217.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o217; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_deferred_reads.py \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_remote_random.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_graph_api.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-400
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_eager_rows import PROGRAMS as A; from unseen_loop_bodies_draws import PROGRAMS as B; from unseen_loop_bodies_graphed_draws import PROGRAMS as C; from unseen_loop_bodies_call_scalars import PROGRAMS as D; print(','.join(list(A)+list(B)+list(C)+list(D)))")
timeout 140 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
timeout 140 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
timeout 70 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -14 | cut -c1-150
cd ../..
tar czf $OUT/o217.tgz -C /tmp o217
echo "end $(date +%T)"
