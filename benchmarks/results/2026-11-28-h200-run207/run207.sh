#!/bin/bash
# thirty-sixth session, run 207 (issue 50): the session's code (b064bf1: deferred reads, a measured run ahead learnt when answered) against local CuPy: the
# tests of stretch replay, draws ahead, the steady lane, run ahead, pushed replies, moving
# views and slices, remote random, cupy.fuse, the fast path, call scalars and CuPy's graph API;
# the campaigns whose loops have eager ops (eager rows, draws, graphed draws, call scalars, the
# second) bitwise; the standing (every program of programs.py, one call) and replay_sync.py.
#   run(command="bash .gpu/run207.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o207; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 240 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_moving_views.py \
  tests/kernelproxy/test_moving_slices.py tests/kernelproxy/test_remote_random.py tests/kernelproxy/test_fuse_programs.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_call_scalars_as_params.py tests/kernelproxy/test_graph_api.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_eager_rows import PROGRAMS as A; from unseen_loop_bodies_draws import PROGRAMS as B; from unseen_loop_bodies_graphed_draws import PROGRAMS as C; from unseen_loop_bodies_call_scalars import PROGRAMS as D; print(','.join(list(A)+list(B)+list(C)+list(D)))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_more import PROGRAMS as B; print(','.join(B))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u2.json > $O/u2.txt 2>&1
echo "second campaign rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u2.txt | cut -c1-300; grep -c Traceback $O/u2.txt
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s.get(k) for k in ("ahead","draws_redone","lane","pushed","push_confirmed","reads_deferred","lane_declined","lane_left_why","copied")})" $O/p.json
timeout 100 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -14 | cut -c1-150
cd ../..
tar czf $OUT/o207.tgz -C /tmp o207
echo "end $(date +%T)"
