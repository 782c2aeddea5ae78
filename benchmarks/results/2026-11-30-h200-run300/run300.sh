#!/bin/bash
# forty-ninth session, run 300 (issue 50): graphs by the ints they baked (284ce97: an index
# that takes turns, buf[i % 8] = x, gets a graph for each value). Its GPU tests against local
# CuPy; the eleventh campaign (records) and the sixth (moving slices) bit for bit against
# local CuPy, then timed: "base" the tree before the assignment's index was a parameter
# (5af4811), "old" with it but no graphs by value (52e00eb), "new"; calls base new old new
# old base.
#   run(command="bash .gpu/run300.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o300; mkdir -p $O
for tree in base old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/; cp .gpu/new/benchmarks/*.py .gpu/base/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_moving_slices.py tests/gpu_backend/test_moving_views.py tests/gpu_backend/test_graph_variants.py \
  tests/kernelproxy/test_call_scalars_as_params.py tests/gpu_backend/test_run_ahead.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_user_kernels_ahead.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -14 | cut -c1-300)
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy \
  --programs $(python3 -c "import sys; sys.path.insert(0,'benchmarks'); from unseen_programs import CAMPAIGN_OF as C; print(','.join(n for n, c in C.items() if c in ('records', 'moving_slices')))") \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $?"; grep -E " n= |programs, " $O/loops.txt | head -30)
i=0
for tree in base new old new old base; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --campaigns records,moving_slices --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|^records|^moving" $O/u-$i-$tree.txt)
done
tar czf $OUT/o300.tgz -C /tmp o300
echo "end $(date +%T)"
