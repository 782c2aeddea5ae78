#!/bin/bash
# thirty-fifth session, run 193 (issue 50): (1) what each CUDA call of the worker's replay costs
# the host (benchmarks/worker_calls_probe.py); (2) the draws-ahead tests against local CuPy at
# 1dbc941 (a run ahead's draw refused by its call marks its stretch); (3) the drawing programs,
# the tree before (4e6a525, "old") against 1dbc941 ("new"), alternating old new new old.
#   run(command="bash .gpu/run193.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o193; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 120 python3 benchmarks/worker_calls_probe.py --json $O/c.json > $O/c.txt 2>&1
echo "probe rc $? $(date +%T)"; head -17 $O/c.txt
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_remote_random.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
cd ../..
unset PYTHONPATH
P=langevin_annealed,random_walk,mc_option,monte_carlo_pi,bootstrap_rng,monte_carlo_pi_rng
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py \
     --rounds 3 --own-pools --transports ipc --devices 0 --programs $P --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110
   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['stretches']['ipc']; print({k: s[k] for k in ('ahead','ahead_missed','draws_redone','lane','pushed')}); print({n: round(p['proxy_ipc']['worker_median_s']*1e3, 1) for n, p in d['programs'].items()})" $O/p-$i-$tree.json)
done
tar czf $OUT/o193.tgz -C /tmp o193
echo "end $(date +%T)"
