#!/bin/bash
# thirty-ninth session, run 225 (issue 50): where a pushed loop's worker spends each message,
# in finer parts (program_phases.py, the new marks), a cProfile of the worker of
# replay_sync.py's hot sync, the CUDA calls' costs on this host (worker_calls_probe.py); the
# staging rings' unpinning test on the GPU.
#   run(command="bash .gpu/run225.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o225; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 60 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu_backend/test_staging_unpinned.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300
timeout 120 python3 benchmarks/program_phases.py --devices 0 --rounds 5 --programs hot_sync,chain20 --top 22 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | grep -v "the last run" | cut -c1-1200
timeout 90 python3 benchmarks/replay_profile.py --devices 0 --loop hot_sync --reps 3000 --policy share --top 45 > $O/prof.txt 2>&1
echo "profile rc $? $(date +%T)"; sed -n '/=== worker/,$p' $O/prof.txt | head -60 | cut -c1-160
timeout 60 python3 benchmarks/worker_calls_probe.py --reps 2000 --json $O/calls.json > $O/calls.txt 2>&1
echo "calls rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/calls.txt | head -30 | cut -c1-150
cd ../..
tar czf $OUT/o225.tgz -C /tmp o225
echo "end $(date +%T)"
