#!/bin/bash
# twenty-fourth session, run 111: the session's end state on CuPy: unseen_loops.py's 174 programs against local CuPy,
# the GPU tests of the steady lane, the fixes and the run ahead, and programs.py (the defaults, bitwise).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run111.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o111
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 200 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --json /tmp/o111/u.json > /tmp/o111/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o111/u.txt; grep -c Traceback /tmp/o111/u.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_aliased_inputs.py tests/kernelproxy/test_replay_scalars_and_errors.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_stretch_replay.py \
  > /tmp/o111/t.txt 2>&1
echo "tests rc $?"; tail -3 /tmp/o111/t.txt
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --policy share \
  --json /tmp/o111/p.json > /tmp/o111/p.txt 2>&1
grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" /tmp/o111/p.txt | head -22
tar czf $OUT/o111.tgz -C /tmp o111
echo "end $(date +%T)"
