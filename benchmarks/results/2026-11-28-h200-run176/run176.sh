#!/bin/bash
# thirty-third session, run 176 (issue 50): runs ahead that keep missing sit out twice as
# long each round. The tree before the session (a5f34ec, given the new programs' files)
# against the new in alternating calls (old new new old) for the programs whose scalars
# change through calls, with Monte Carlo pi (a RandomState, its scalars constant) as the
# control; the worker's profile of langevin_annealed; the run-ahead and draws GPU tests.
#   run(command="bash .gpu/run176.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o176; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
P=langevin_annealed,ista_continuation,monte_carlo_pi
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110; grep -E "replays of held" $O/p-$i-$tree.txt | cut -c1-200
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s[k] for k in ('ahead','ahead_missed','draws_redone','lane','pushed')}); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
timeout 90 python3 benchmarks/replay_profile.py --devices 0 --loop langevin_annealed --reps 3 --top 22 > $O/prof.txt 2>&1
echo "profile rc $? $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_call_scalars_as_params.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
cd ../..
tar czf $OUT/o176.tgz -C /tmp o176
echo "end $(date +%T)"
