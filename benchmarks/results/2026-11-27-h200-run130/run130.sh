#!/bin/bash
# twenty-sixth session, run 130 (the steady lane's plan no longer keeps arrays out of their
# turns): the lane's GPU tests (its memory test expected to pass again), and an A/B of the hot
# sync and chain20 between the tree before the fix (.gpu/old, fdc55f9) and after (.gpu/clean),
# alternating, two passes.
# Before: clean exports of HEAD into .gpu/clean and of fdc55f9 into .gpu/old (docs and
#   benchmarks/results left out), REV each; run(command="bash .gpu/run130.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o130
TOP=$PWD
for tree in clean old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "new $(cat .gpu/clean/REV) old $(cat .gpu/old/REV) $(date +%T)"
cd $TOP/.gpu/clean
PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_steady_lane.py > /tmp/o130/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^E  " /tmp/o130/t.txt | tail -6
for pass in 1 2; do
  for tree in clean old; do
    cd $TOP/.gpu/$tree; export PYTHONPATH=/tmp/site:$PWD
    timeout 60 python3 benchmarks/replay_sync.py --reps 3000 --own-pools --transports ipc --loops hot_sync --devices 0 --policy share \
      --json /tmp/o130/r-$pass-$tree.json > /tmp/o130/r-$pass-$tree.txt 2>&1
    echo "pass $pass $tree"; grep -E "^(hot_sync|raw)" /tmp/o130/r-$pass-$tree.txt | head -3
    timeout 60 python3 benchmarks/held_loops.py --loops chain20 --own-pools --transports ipc --devices 0 --policy share \
      --json /tmp/o130/h-$pass-$tree.json > /tmp/o130/h-$pass-$tree.txt 2>&1
    grep -E "^(local|proxy|chain20)" /tmp/o130/h-$pass-$tree.txt | head -4
  done
done
tar czf $OUT/o130.tgz -C /tmp o130
echo "end $(date +%T)"
