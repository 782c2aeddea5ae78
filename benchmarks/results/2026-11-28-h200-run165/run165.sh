#!/bin/bash
# thirty-second session, run 165 (issue 50): the standing at this session's end, one call:
# the draws' and replay's GPU tests after the review's mends; programs.py (every program, ipc against local CuPy, three rounds) and replay_sync.py (every
# loop); and cuRAND's capture at sizes from 2^14 to 2^22 (curand_capture_probe.py --sizes).
#   run(command="bash .gpu/run165.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o165; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
timeout 60 python3 benchmarks/curand_capture_probe.py --sizes --json $O/sizes.json > $O/sizes.txt 2>&1
echo "sizes probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/sizes.txt | head -60
timeout 70 python3 benchmarks/replay_sync.py --devices 0 --reps 1000 --own-pools --transports ipc --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +[0-9.]+ +[0-9.]+ |^raw" $O/r.txt | cut -c1-110
timeout 240 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p.txt | cut -c1-100
cd ../..
tar czf $OUT/o165.tgz -C /tmp o165
echo "end $(date +%T)"
