#!/bin/bash
# thirty-seventh session, run 210 (issue 50): the changes not GPU-run last session (the deferral's
# 25 µs bound, a run ahead's own deferred flag, a released object's stretches dropped, the lane's
# reworked memory test, test_deferred_reads.py, test_objects_gone.py) against local CuPy, and
# where each message of the worker-bound programs goes (program_phases.py).
#   run(command="bash .gpu/run210.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o210; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 260 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_moving_views.py \
  tests/gpu_backend/test_deferred_reads.py tests/kernelproxy/test_objects_gone.py \
  tests/kernelproxy/test_moving_slices.py tests/kernelproxy/test_remote_random.py tests/kernelproxy/test_fuse_programs.py \
  tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_call_scalars_as_params.py tests/kernelproxy/test_graph_api.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
timeout 260 python3 benchmarks/program_phases.py --devices 0 --rounds 3 \
  --programs mc_option,monte_carlo_pi,random_walk,bootstrap_rng,monte_carlo_pi_rng,langevin_annealed,sgd_minibatch,loss_and_accuracy,nbody,fused_loop,chain20 \
  --top 24 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $? $(date +%T)"; grep -v '^ \|^{\|^}' $O/w.txt | cut -c1-900
cd ../..
tar czf $OUT/o210.tgz -C /tmp o210
echo "end $(date +%T)"
