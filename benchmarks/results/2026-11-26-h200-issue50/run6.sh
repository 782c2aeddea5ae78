#!/bin/bash
# issue 50, run 6: the client's per-iteration path (helper's commits) and the compiled ops, from a clean export
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so && echo "built there" | tee -a $OUT/gpu.txt
timeout 130 python3 benchmarks/held_loops.py --own-pools --transports ipc,ipc-nocompiled,ipc-noearly --loops chain20,heat2d --json $OUT/held6.json 2>&1 | grep -v '^ \|^{\|^}' > $OUT/held6.log; grep -E "^side|^local|^proxy" $OUT/held6.log
timeout 90 python3 benchmarks/replay_sync.py --own-pools --transports ipc,ipc-nocompiled --json $OUT/sync6.json 2>&1 | grep -v '^ \|^{\|^}' > $OUT/sync6.log; tail -6 $OUT/sync6.log
timeout 230 python3 benchmarks/programs.py --own-pools --rounds 3 --transports ipc --json $OUT/prog6.json 2>&1 | grep -v '^ \|^{\|^}' > $OUT/prog6.log; tail -25 $OUT/prog6.log
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 110 python3 -m pytest -q -n 0 -p no:cacheprovider -x tests/kernelproxy/test_held_ops.py tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_early_replay.py 2>&1 | tail -4 | tee $OUT/tests6.log
