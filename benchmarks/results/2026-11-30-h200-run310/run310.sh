#!/bin/bash
# fiftieth session, run 310 (issue 50): after a review, views of an input a stretch dropped
# are made again on the replay's input (not copied), only a temporary's views judged apart,
# a moved bound gives graphs up. The GPU tests of kept views, splits and divmod against
# local CuPy; the 18 loops that split or call functions of several results, the records and
# the moving-slices campaigns bit for bit against local CuPy; the 18 timed, "old" d4c6ae5
# (run 309's new) against "new", calls old new.
#   run(command="bash .gpu/run310.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o310; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
L=$(cat .gpu/loops.list)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 90 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_kept_views_apart.py tests/kernelproxy/test_split_views.py tests/kernelproxy/test_divmod_pair.py \
  tests/gpu_backend/test_kept_views_judged.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "programs, |Traceback" $O/loops.txt | head -5)
i=0
for tree in old new; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 35 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $(cut -d, -f1-18 ../loops.list) --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$tree.txt)
done
tar czf $OUT/o310.tgz -C /tmp o310
echo "end $(date +%T)"
