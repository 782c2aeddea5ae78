#!/bin/bash
# issue 51, run 8: none / fair / share under CUDA MPS (a daemon started here), same scenarios as run 5
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpuwb-mps-pipe CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d || { echo "MPS: the control daemon did not start"; exit 1; }
trap 'echo quit | nvidia-cuda-mps-control; sleep 1' EXIT
python3 -c "import cupy; cupy.arange(3).sum(); print('MPS: a CUDA client ran')" | tee -a $OUT/gpu.txt || exit 1
echo get_server_list | nvidia-cuda-mps-control | sed 's/^/MPS server: /' | tee -a $OUT/gpu.txt
timeout 560 python3 benchmarks/fairness.py --policies none,fair,share --calibrate none \
  --scenarios sync-1:1,sync-1:2:4,sync-long-vs-small,interactive+2048,dl-mix,three-1:2:4,long-vs-small,interactive+long \
  --long 8192 --seconds 6 --calibrate-seconds 2.5 --lead 2 --devices 0 --json $OUT/fair8.json 2>&1 | grep -v 'auth refused' > $OUT/fair8.log
grep -E "^scenario|^[a-z0-9:+-]+ +(none|fair|share) " $OUT/fair8.log; grep -E "^fair |^share " $OUT/fair8.log | grep -E "met|MISSED" | cut -c1-100
