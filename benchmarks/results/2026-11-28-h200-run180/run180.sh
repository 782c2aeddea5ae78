#!/bin/bash
# thirty-third session, run 180 (issue 50): a Generator's draw made in the graphs given
# parameters (their values baked into the capture; captured again with the draw eager where
# a replay's differ). The GPU tests against local CuPy; the three drawing campaigns and the
# call-scalars one against local CuPy; the Generator programs (their rng.uniform bounds
# now parameters, baked) and the two new ones, the tree before the session (a5f34ec, given
# the new programs' files) against the new in alternating calls.
#   run(command="bash .gpu/run180.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o180; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_call_scalars_as_params.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_graphed_draws import PROGRAMS as A; from unseen_loop_bodies_call_scalars import PROGRAMS as B; from unseen_loop_bodies_draws import PROGRAMS as C; print(','.join(list(A)+list(B)+list(C)))")
PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaigns rc $? $(date +%T)"; grep -E "programs, |no replay" $O/u.txt | cut -c1-250; grep -c Traceback $O/u.txt
grep -E "^graphed_scale_that_changes +n=" $O/u.txt | cut -c1-130
cd ../..
P=monte_carlo_pi_rng,bootstrap_rng,ista_continuation,langevin_annealed
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({n: (round(p['proxy_ipc']['worker_median_s']*1e3, 1), p['proxy_ipc']['replays_median']) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o180.tgz -C /tmp o180
echo "end $(date +%T)"
