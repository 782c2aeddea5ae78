#!/bin/bash
# fiftieth session, run 306 (issue 50): the forty-ninth session's two VM-only changes on a
# GPU (a history only eager assignments write, written where it is; a narrow float's decay
# guessed) and the review's mends, "old" 7626dd4 (run 304's standing) against "new": the
# records campaign and the new twelfth campaign (schedules: np.float32 decays, warm-ups,
# cosine, ...) bit for bit against local CuPy, the GPU tests near the change, then both
# campaigns timed, calls old new new old new old.
#   run(command="bash .gpu/run306.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o306; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy \
  --programs $(python3 -c "import sys; sys.path.insert(0,'benchmarks'); from unseen_programs import CAMPAIGN_OF as C; print(','.join(n for n, c in C.items() if c in ('records', 'schedules')))") \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "programs, |Traceback" $O/loops.txt | head -5)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 140 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_moving_views.py tests/gpu_backend/test_graph_variants.py tests/gpu_backend/test_run_ahead.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --campaigns records,schedules --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|^(records|schedules) |^(ring_buffer|large_history|float32_carried|float32_power) " $O/u-$i-$tree.txt)
done
tar czf $OUT/o306.tgz -C /tmp o306
echo "end $(date +%T)"
