#!/bin/bash
# thirty-sixth session, run 203 (issue 50): a pushable run ahead's closing reads deferred while
# the client's next message waits (GPUWB_DEFER_READS, worker/steady_lane.py) against read at once
# (side ipc-nodefer), in alternating rounds of one call, twice; the phases of both; the GPU tests
# of the lane, pushes, draws and stretch replay against local CuPy; three campaigns bitwise.
#   run(command="bash .gpu/run203.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o203; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
P=mc_option,monte_carlo_pi,random_walk,langevin_annealed,bootstrap_rng,monte_carlo_pi_rng,chain20,heat2d,stencil,hot_sync,logistic_regression,loss_and_accuracy
for i in 1 2; do
  timeout 150 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nodefer --devices 0 \
    --programs $P --json $O/p-$i.json > $O/p-$i.txt 2>&1
  echo "programs $i rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +[0-9]+ " $O/p-$i.txt | cut -c1-150
done
timeout 100 python3 benchmarks/worker_phases.py --devices 0 --rounds 5 --programs mc_option,random_walk,monte_carlo_pi \
  --top 30 --json $O/w-defer.json > $O/w-defer.txt 2>&1
echo "phases defer rc $? $(date +%T)"; grep -v '^ \|^{\|^}' $O/w-defer.txt | cut -c1-900
GPUWB_DEFER_READS=0 timeout 100 python3 benchmarks/worker_phases.py --devices 0 --rounds 5 --programs mc_option,random_walk,monte_carlo_pi \
  --top 30 --json $O/w-nodefer.json > $O/w-nodefer.txt 2>&1
echo "phases nodefer rc $? $(date +%T)"; grep -v '^ \|^{\|^}' $O/w-nodefer.txt | cut -c1-900
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 220 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_eager_rows import PROGRAMS as A; from unseen_loop_bodies_draws import PROGRAMS as B; from unseen_loop_bodies_graphed_draws import PROGRAMS as C; print(','.join(list(A)+list(B)+list(C)))")
timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay graphed" $O/u.txt | cut -c1-300; grep -c Traceback $O/u.txt
cd ../..
tar czf $OUT/o203.tgz -C /tmp o203
echo "end $(date +%T)"
