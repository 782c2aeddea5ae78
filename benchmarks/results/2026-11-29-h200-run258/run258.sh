#!/bin/bash
# forty-third session, run 258 (issue 50): a small upload inside a held stretch (one message a
# step for SGD and the MLP). The GPU tests of held uploads, the fast path, stretch replay,
# transfers, run ahead, the lane and pushes against local CuPy; then sgd_minibatch and
# mlp_training against the session's first tree (4482843, "old": the new benchmark scripts
# over its library), seven rounds a call, old new new old; then program_phases.py over both
# programs on the new tree.
#   run(command="bash .gpu/run258.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o258; mkdir -p $O
for tree in new old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py tests/kernelproxy/test_stretch_fast_path.py tests/gpu_backend/test_stretch_replay.py \
  tests/kernelproxy/test_transfers.py tests/gpu_backend/test_staging.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_lane_turns.py \
  tests/gpu_backend/test_deferred_reads.py tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_graph_api.py \
  tests/kernelproxy/test_scalar_reads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 75 python3 benchmarks/programs.py --rounds 7 --own-pools --transports ipc --devices 0 --programs sgd_minibatch,mlp_training \
     --json $O/ab-$i-$tree.json > $O/ab-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|bitwise" $O/ab-$i-$tree.txt | cut -c1-120)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/program_phases.py --programs sgd_minibatch,mlp_training --rounds 3 --devices 0 --json $O/ph.json > $O/ph.txt 2>&1
 echo "phases rc $?"; grep -vE "^ |^\{|^\}" $O/ph.txt | head -12 | cut -c1-260)
tar czf $OUT/o258.tgz -C /tmp o258
echo "end $(date +%T)"
