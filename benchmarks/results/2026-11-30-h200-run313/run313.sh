#!/bin/bash
# fifty-second session, run 313 (issue 50): now that a call of several results runs between
# its stretch's graphs (run 312), the cut before such a call (a held stretch ends there and
# the call goes alone) against joining it to the stretch (GPUWB_SEVERAL_JOIN=1: one message
# a step). One tree; the several-results loops bit for bit with joining on; the same loops
# timed against local CuPy, calls cut join join cut join cut.
#   run(command="bash .gpu/run313.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o313; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
L=$(cat .gpu/loops.list)
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
GPUWB_SEVERAL_JOIN=1 GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 8 \
  $(cat ../tests.list) > $O/t.txt 2>&1
echo "tests (joined) rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
GPUWB_SEVERAL_JOIN=1 PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
echo "loops (joined) rc $? $(date +%T)"; grep -E "programs, |Traceback|no replay" $O/loops.txt | head -5
i=0
for side in cut join join cut join cut; do
  i=$((i+1)); flag=0; [ $side = join ] && flag=1
  echo "call $i $side $(date +%T)"
  GPUWB_SEVERAL_JOIN=$flag PYTHONPATH=/tmp/site:$PWD timeout 55 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 45 --programs $L --json $O/u-$i-$side.json > $O/u-$i-$side.txt 2>&1
  echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$side.txt
done
tar czf $OUT/o313.tgz -C /tmp o313
echo "end $(date +%T)"
