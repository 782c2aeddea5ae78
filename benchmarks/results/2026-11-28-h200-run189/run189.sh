#!/bin/bash
# thirty-fourth session, run 189 (issue 50): the session's final commit against local CuPy: the
# tests of what it touched (moving slices and views, the templates, fused definitions, stretch
# replay, the steady lane, run ahead, draws ahead, call scalars), the moving-slices and first
# campaigns bitwise; the standing (every program of programs.py, one call) and replay_sync.
#   run(command="bash .gpu/run189.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o189; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 220 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_moving_views.py tests/kernelproxy/test_fuse_programs.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_call_scalars_as_params.py \
  tests/kernelproxy/test_stretch_key.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_moving_slices import PROGRAMS as A; from unseen_loop_bodies import PROGRAMS as B; print(','.join(list(A)+list(B)))")
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
timeout 100 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -14 | cut -c1-150
cd ../..
tar czf $OUT/o189.tgz -C /tmp o189
echo "end $(date +%T)"
