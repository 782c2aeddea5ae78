#!/bin/bash
# thirty-seventh session, run 213 (issue 50): mid-sized transfers through the staging ring
# (6ddabb3) beside the tree before (84b3567, .gpu/old): upload_sizes.py (new: ipc and
# ipc-framed in one pool; old: ipc) in alternating calls; the programs that upload or download
# such arrays (bootstrap_rng's 8 MB sample, logistic regression, SGD, MLP, k-means, CG) in
# alternating calls; the GPU tests (the reworked memory tests among them, transfers); the
# standing (every program, one call).
#   run(command="bash .gpu/run213.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o213; mkdir -p $O
cp .gpu/new/benchmarks/upload_sizes.py .gpu/old/benchmarks/
for t in new old; do (cd .gpu/$t && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null); done
echo "new $(cat .gpu/new/REV) old $(cat .gpu/old/REV) $(date +%T)"
for call in 1 2; do
  for t in new old; do
    sides=ipc; [ $t = new ] && sides=ipc,ipc-framed
    (cd .gpu/$t && PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/upload_sizes.py --devices 0 --reps 30 \
       --sizes 262144,1048576,4194304,8000000,16777216 --sides $sides --json $O/up-$t-$call.json > $O/up-$t-$call.txt 2>&1)
    echo "upload_sizes $t $call rc $? $(date +%T)"; head -6 $O/up-$t-$call.txt
  done
done
P=bootstrap_rng,logistic_regression,sgd_minibatch,mlp_training,kmeans,conjugate_gradient
for call in 1 2; do
  for t in new old; do
    (cd .gpu/$t && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc \
       --devices 0 --programs $P --json $O/p-$t-$call.json > $O/p-$t-$call.txt 2>&1)
    echo "programs $t $call rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$t-$call.txt | cut -c1-110
  done
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 260 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_moving_views.py \
  tests/gpu_backend/test_deferred_reads.py tests/kernelproxy/test_objects_gone.py tests/kernelproxy/test_transfers.py \
  tests/kernelproxy/test_moving_slices.py tests/kernelproxy/test_remote_random.py tests/kernelproxy/test_fuse_programs.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_call_scalars_as_params.py tests/kernelproxy/test_graph_api.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
timeout 150 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110
cd ../..
tar czf $OUT/o213.tgz -C /tmp o213
echo "end $(date +%T)"
