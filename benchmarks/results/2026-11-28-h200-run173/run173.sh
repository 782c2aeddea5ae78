#!/bin/bash
# thirty-second session, run 173 (issue 50): followers that draw run ahead. The GPU tests of
# draws ahead and of stretches taking turns against local CuPy; the drawing campaign.
#   run(command="bash .gpu/run173.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o173; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 70 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_run_ahead_turns.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_draws import PROGRAMS; print(','.join(PROGRAMS))")
timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/draws.json > $O/draws.txt 2>&1
echo "draws campaign rc $? $(date +%T)"; grep -E "programs, " $O/draws.txt | cut -c1-200; grep -c Traceback $O/draws.txt
grep -E "^(draws_changing_size|draws_two_bodies_in_turn) +n=" $O/draws.txt | cut -c1-120
cd ../..
tar czf $OUT/o173.tgz -C /tmp o173
echo "end $(date +%T)"
