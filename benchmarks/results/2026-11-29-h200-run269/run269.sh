#!/bin/bash
# forty-fourth session, run 269 (issues 50 and 51): the session's last code (two steps in
# flight after its review; every thread its own msgpack Packer). The GPU tests of stretch
# replay, the lane, pushes, reads, uploads, transfers, the graph API and two steps in flight
# against local CuPy; then the standing, every program, two calls.
#   run(command="bash .gpu/run269.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o269; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 260 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_steps_overlapped.py tests/kernelproxy/test_held_uploads.py tests/kernelproxy/test_stretch_fast_path.py \
  tests/gpu_backend/test_stretch_replay.py tests/kernelproxy/test_transfers.py tests/gpu_backend/test_staging.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_lane_turns.py tests/gpu_backend/test_deferred_reads.py tests/gpu_backend/test_draws_ahead.py \
  tests/kernelproxy/test_graph_api.py tests/kernelproxy/test_scalar_reads.py tests/gpu_backend/test_lane_reads.py \
  tests/gpu_backend/test_lane_measures.py tests/gpu_backend/test_codec_threads.py tests/gpu_backend/test_heartbeat_notes.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300
for i in 1 2; do
  echo "standing $i $(date +%T)"
  timeout 125 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p$i.json > $O/p$i.txt 2>&1
  echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p$i.txt | cut -c1-110
done
cd ../..
tar czf $OUT/o269.tgz -C /tmp o269
echo "end $(date +%T)"
