#!/bin/bash
# twenty-fifth session, run 121 (a fused stretch early-safe and run ahead where its program writes nothing it was given, its results predicted): fused_loop fused and unfused
# (GPUWB_FUSE=0, side ipc-nofuse), alternating in one call; step_profile of both sides.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run121.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o121
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nofuse --devices 0 --policy share \
  --programs fused_loop --json /tmp/o121/p.json > /tmp/o121/p.txt 2>&1
echo "programs rc $?"; head -3 /tmp/o121/p.txt; grep -E "replays of held" /tmp/o121/p.txt
timeout 100 python3 benchmarks/step_profile.py --programs fused_loop --rounds 3 --devices 0 --transports ipc,ipc-nofuse \
  --json /tmp/o121/sp.json > /tmp/o121/sp.txt 2>&1
echo "step_profile rc $?"; grep -A4 "program / side" /tmp/o121/sp.txt | head -8
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_fuse_programs.py tests/kernelproxy/test_functional.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_aliased_inputs.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_run_ahead_alone.py tests/gpu_backend/test_fused_programs.py > /tmp/o121/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o121/t.txt | tail -8
timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs fused_functions --json /tmp/o121/u.json > /tmp/o121/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, " /tmp/o121/u.txt
tar czf $OUT/o121.tgz -C /tmp o121
echo "end $(date +%T)"
