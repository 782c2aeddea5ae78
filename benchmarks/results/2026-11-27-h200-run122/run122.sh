#!/bin/bash
# twenty-sixth session, run 122 (random draws run ahead, undone from the generator's journal):
# the GPU tests of draws ahead, run ahead, stretch replay, the steady lane and remote random
# against local CuPy; the third unseen-loop campaign (13 drawing loops) and the two earlier
# drawing loops against local CuPy; programs.py's drawing programs with draws ahead on and off
# (side ipc-nodraws, GPUWB_DRAWS_AHEAD=0), in one call.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run122.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o122
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nodraws --devices 0 --policy share \
  --programs random_walk,monte_carlo_pi,mc_option,chain20,black_scholes --json /tmp/o122/p.json > /tmp/o122/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal|replays of held" /tmp/o122/p.txt | head -16
DR=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_draws import PROGRAMS; print(','.join(PROGRAMS))")
timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$DR,random_reseeded,random_shuffle_and_choice" \
  --json /tmp/o122/u.json > /tmp/o122/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, |no replay" /tmp/o122/u.txt; grep -c Traceback /tmp/o122/u.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 220 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_remote_random.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_stretch_replay.py \
  > /tmp/o122/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o122/t.txt | tail -8
tar czf $OUT/o122.tgz -C /tmp o122
echo "end $(date +%T)"
