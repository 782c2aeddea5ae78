#!/bin/bash
# issue 50, ninth session, run 1: the compiled held ops, A/B in one call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/gpu.txt
nproc | tee -a $OUT/gpu.txt
gcc --version | head -1 | tee -a $OUT/gpu.txt
# build there too (the carried .so is the fallback)
P=python3; cp kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so /tmp/carried.so
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$($P -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so && echo "built there" | tee -a $OUT/gpu.txt || cp /tmp/carried.so kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so
python3 -c "import cupy, kernelproxy.held_ops as h; print('cupy', cupy.__version__, 'accelerator', h.AVAILABLE)" | tee -a $OUT/gpu.txt
timeout 240 python3 benchmarks/held_loops.py --own-pools --transports ipc,ipc-nocompiled,ipc-noearly,ipc-noearly+nocompiled --loops chain20,heat2d --json $OUT/held.json 2>&1 | grep -v '^ \|^{\|^}' | tee $OUT/held.log
timeout 150 python3 benchmarks/replay_sync.py --own-pools --transports ipc,ipc-nocompiled --json $OUT/sync.json 2>&1 | grep -v '^ \|^{\|^}' | tee $OUT/sync.log
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -n 0 -p no:cacheprovider tests/kernelproxy/test_held_ops.py tests/kernelproxy/test_stretch_fast_path.py 2>&1 | tail -15 | tee $OUT/tests.log
