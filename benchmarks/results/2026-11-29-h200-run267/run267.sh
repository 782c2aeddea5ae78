#!/bin/bash
# forty-fourth session, run 267 (issue 50): two steps in flight (worker/lane_overlap.py,
# 60942cf). The GPU tests of the overlap, pushes, the lane, its reads and deferred reads
# against local CuPy; the device-bound programs with the overlap on and off (sides ipc and
# ipc-nooverlap in pools of their own, the same calls), three calls; replay_sync.py's
# heat_step likewise; program_phases.py over n-body and heat2d 2048².
#   run(command="bash .gpu/run267.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o267; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_steps_overlapped.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_lane_reads.py tests/gpu_backend/test_deferred_reads.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300
for i in 1 2 3; do
  echo "programs $i $(date +%T)"
  timeout 100 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nooverlap --devices 0 \
    --programs nbody,heat2d_2048,fused_loop,kmeans,conjugate_gradient,heat2d,stencil --json $O/p$i.json > $O/p$i.txt 2>&1
  echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|bitwise equal" $O/p$i.txt | cut -c1-140
done
for i in 1 2; do
  echo "replay_sync $i $(date +%T)"
  timeout 60 python3 benchmarks/replay_sync.py --reps 600 --own-pools --devices 0 --policy share --transports ipc,ipc-nooverlap --loops heat_step \
    --json $O/rs$i.json > $O/rs$i.txt 2>&1; echo "rc $?"; grep -E "^heat_step" $O/rs$i.txt | cut -c1-150
done
echo "phases $(date +%T)"
timeout 80 python3 benchmarks/program_phases.py --programs nbody,heat2d_2048 --rounds 2 --devices 0 --json $O/ph.json > $O/ph.txt 2>&1
echo "phases rc $?"; grep -vE "^ |^\{|^\}" $O/ph.txt | head -6 | cut -c1-300
cd ../..
tar czf $OUT/o267.tgz -C /tmp o267
echo "end $(date +%T)"
