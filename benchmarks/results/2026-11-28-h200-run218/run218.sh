#!/bin/bash
# thirty-seventh session, run 218 (issue 50): a lone session's lane measuring the run ahead the
# pacer wants measured itself, beside the lane declining it (the side ipc-nolanemeasure, a pool
# of its own with GPUWB_LANE_MEASURES=0), two calls of programs.py on the lane's programs; the
# new GPU tests of it.
#   run(command="bash .gpu/run218.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o218; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 70 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_lane_measures.py tests/kernelproxy/test_objects_gone.py tests/gpu_backend/test_pushed_replies.py tests/kernelproxy/test_transfers.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300
P=mc_option,monte_carlo_pi,random_walk,bootstrap_rng,monte_carlo_pi_rng,chain20,hot_sync
for order in ipc,ipc-nolanemeasure ipc-nolanemeasure,ipc; do
  timeout 60 python3 benchmarks/programs.py --rounds 3 --own-pools --transports $order --devices 0 --programs $P \
    --json $O/p-$order.json > $O/p-$order.txt 2>&1
  echo "programs $order rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$order.txt | cut -c1-140
done
cd ../..
tar czf $OUT/o218.tgz -C /tmp o218
echo "end $(date +%T)"
