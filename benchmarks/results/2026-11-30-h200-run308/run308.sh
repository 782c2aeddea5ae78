#!/bin/bash
# fiftieth session, run 308 (issue 50): split and its family issued as basic slices (ops of
# one result that held stretches keep) and kept views that lie apart handed out as copies,
# "old" 2d4cb70 against "new": the 18 unseen loops that split or call functions of several
# results bit for bit against local CuPy, the GPU tests of both changes and of the code
# around them, then the 18 loops timed, calls old new new old new old.
#   run(command="bash .gpu/run308.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o308; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
L=$(cat .gpu/loops.list)
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "programs, |Traceback" $O/loops.txt | head -5)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_split_views.py tests/gpu_backend/test_kept_views_apart.py tests/kernelproxy/test_result_structures.py \
  tests/kernelproxy/test_result_structures_edges.py tests/gpu_backend/test_kept_views_judged.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $L --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$tree.txt)
done
tar czf $OUT/o308.tgz -C /tmp o308
echo "end $(date +%T)"
