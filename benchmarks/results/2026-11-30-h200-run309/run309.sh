#!/bin/bash
# fiftieth session, run 309 (issue 50): divmod of real operands issued as floor_divide and
# remainder. Is CuPy's divmod that pair to the bit (benchmarks/divmod_probe.py)? The 18
# unseen loops that split or call functions of several results bit for bit against local
# CuPy, the GPU tests of the session's changes, the 18 timed "old" 1bcb5a5 (run 308's new)
# against "new", calls old new new old; then the standing: every unseen loop (304) timed
# against local CuPy within a budget.
#   run(command="bash .gpu/run309.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o309; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
L=$(cat .gpu/loops.list)
(cd .gpu/new && echo "probe rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/divmod_probe.py --json $O/probe.json > $O/probe.txt 2>&1
 echo "rc $?"; grep -E "cases on" $O/probe.txt)
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "programs, |Traceback" $O/loops.txt | head -5)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/kernelproxy/test_divmod_pair.py tests/kernelproxy/test_split_views.py tests/gpu_backend/test_kept_views_apart.py \
  tests/kernelproxy/test_result_structures.py tests/kernelproxy/test_result_structures_edges.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $L --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$tree.txt)
done
(cd .gpu/new && echo "standing rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 300 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 270 --json $O/us.json > $O/us.txt 2>&1
 echo "rc $? $(date +%T)"; grep -E "with problems|^all |not begun" $O/us.txt | tail -4 | cut -c1-200)
tar czf $OUT/o309.tgz -C /tmp o309
echo "end $(date +%T)"
