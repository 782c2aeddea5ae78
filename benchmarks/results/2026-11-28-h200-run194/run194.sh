#!/bin/bash
# thirty-fifth session, run 194 (issue 50): at 724f3e3 (the first graph gathers its inputs after
# leading eager segments that read none, and those segments' results: a drawing loop copies
# nothing apart but its write-back): (1) the tests of stretch replay, draws ahead, the steady
# lane, run ahead, moving views and slices, pushed replies against local CuPy; (2) the drawing
# programs and the stencils, the session's start (4e6a525, "old") against 724f3e3 ("new"),
# alternating old new new old; (3) the worker's CUDA calls probe again.
#   run(command="bash .gpu/run194.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o194; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 120 python3 benchmarks/worker_calls_probe.py --json $O/c.json > $O/c.txt 2>&1
echo "probe rc $? $(date +%T)"; head -17 $O/c.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 240 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_remote_random.py tests/gpu_backend/test_stretch_replay.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_moving_views.py \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_pushed_replies.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
cd ../..
unset PYTHONPATH
P=langevin_annealed,random_walk,mc_option,monte_carlo_pi,bootstrap_rng,monte_carlo_pi_rng,stencil,heat2d,chain20,sgd_minibatch
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s.get(k) for k in ('ahead','ahead_missed','draws_redone','lane','pushed','copied')}); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o194.tgz -C /tmp o194
echo "end $(date +%T)"
