#!/bin/bash
# thirtieth session, run 152 (issue 50): a gather through integer results captured
# (worker/eager_ops.py: p[rows, y] of an arange, centres[labels] of an argmin; run 151 found
# MLP's fancy-index gathers run eagerly at ~140 us each in the worker). Two clean exports:
# .gpu/clean (this tree) and .gpu/prev (98cb00a, the tree before). The stretch-replay GPU
# tests against local CuPy; the diagnostic copy printing capture refusals on the new test's
# loop; programs.py on the programs with such gathers, prev clean clean prev.
#   run(command="bash .gpu/run152.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o152; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
cp -r .gpu/clean /tmp/diag && python3 .gpu/diag_patch.py /tmp/diag
(cd /tmp/diag && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 0 -s \
  tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
grep -E "DIAG" $O/t.txt | sort | uniq -c | sort -rn | head -12 | cut -c1-300
PROGS=mlp_training,sgd_minibatch,kmeans,loss_and_accuracy
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p-$i-$tree.txt | cut -c1-100
done
tar czf $OUT/o152.tgz -C /tmp o152
echo "end $(date +%T)"
