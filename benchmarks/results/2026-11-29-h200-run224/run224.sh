#!/bin/bash
# thirty-ninth session, run 224 (issue 50): the baseline at the session's start — where a
# pushed loop's worker spends each message on an H200 (program_phases.py for the hot sync and
# chain20), replay_sync.py's hot sync beside local CuPy and the raw round trip; and the GPU
# side of the staging rings' unpinning test (38th session, not run on a GPU yet).
#   run(command="bash .gpu/run224.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o224; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 60 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu_backend/test_staging_unpinned.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300
timeout 120 python3 benchmarks/program_phases.py --devices 0 --rounds 5 --programs hot_sync,chain20 --top 16 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | cut -c1-900
timeout 90 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc --json $O/r.json > $O/r.txt 2>&1
echo "replay_sync rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/r.txt | head -14 | cut -c1-150
cd ../..
tar czf $OUT/o224.tgz -C /tmp o224
echo "end $(date +%T)"
