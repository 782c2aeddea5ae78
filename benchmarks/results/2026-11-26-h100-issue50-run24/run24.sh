#!/bin/bash
# issue 50, run 24: the worker's links (d695d44, c8e3bfc) and the lone replay's path (8220074) A/B: f7fa061 against HEAD, alternating, one call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
ROOT=$PWD
for T in clean before; do
  (cd .gpu/$T && gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so) && echo "built $T" | tee -a $OUT/gpu.txt
done
export PYTHONUNBUFFERED=1
for R in 1 2 3; do
  for T in before clean; do
    cd $ROOT/.gpu/$T; export PYTHONPATH=/tmp/site:$PWD
    timeout 60 python3 benchmarks/held_loops.py --own-pools --transports ipc --loops chain20 --json $OUT/held-$T-$R.json 2>&1 | grep -E "^local |^proxy" | sed "s/^/$T $R /" | tee -a $OUT/ab.log
    timeout 60 python3 benchmarks/replay_sync.py --own-pools --transports ipc --json $OUT/sync-$T-$R.json 2>&1 | grep -E "^hot_sync|^stencil|^raw" | sed "s/^/$T $R /" | tee -a $OUT/ab.log
  done
done
cd $ROOT/.gpu/clean; export PYTHONPATH=/tmp/site:$PWD
