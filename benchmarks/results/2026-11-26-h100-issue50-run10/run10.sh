#!/bin/bash
# issue 50, run 10: the worker's leaner replay path (4828052..c024b28) A/B against e91524f, alternating, one call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
ROOT=$PWD
for T in clean before; do
  (cd .gpu/$T && gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so) && echo "built $T" | tee -a $OUT/gpu.txt
done
export PYTHONUNBUFFERED=1
for R in 1 2; do
  for T in before clean; do
    cd $ROOT/.gpu/$T; export PYTHONPATH=/tmp/site:$PWD
    timeout 60 python3 benchmarks/held_loops.py --own-pools --transports ipc --loops chain20 --json $OUT/held-$T-$R.json 2>&1 | grep -E "^local |^proxy" | sed "s/^/$T $R /" | tee -a $OUT/ab.log
    timeout 60 python3 benchmarks/replay_sync.py --own-pools --transports ipc --json $OUT/sync-$T-$R.json 2>&1 | grep -E "^hot_sync|^stencil|^raw" | sed "s/^/$T $R /" | tee -a $OUT/ab.log
  done
done
cd $ROOT/.gpu/clean; export PYTHONPATH=/tmp/site:$PWD
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_header_alone.py tests/kernelproxy/test_held_ops.py tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_early_replay.py 2>&1 | tail -4 | tee $OUT/tests10.log
