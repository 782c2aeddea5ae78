#!/bin/bash
# fifty-second session, run 312 (issue 50): a call of several results in a held stretch run
# eagerly between the stretch's graphs (phase 2), against phase 1 (every such stretch
# re-run from its records, never graphed: run 311) and against the switch off
# (GPUWB_SEVERAL_HELD=0: such calls cut off, as before). The GPU tests of several results,
# stretch replay and kept views against local CuPy; the several-results loops bit for bit
# against local CuPy; the same loops timed, calls off p1 p2 p2 p1 off ("p1" the tree of
# run 311 plus the session's test fixes, "p2" phase 2, "off" the p2 tree with the switch off).
#   run(command="bash .gpu/run312.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o312; mkdir -p $O
for tree in p1 p2; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
L=$(cat .gpu/loops.list)
(cd .gpu/p2 && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 \
  $(cat ../tests.list) > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
(cd .gpu/p2 && PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
 echo "loops rc $? $(date +%T)"; grep -E "programs, |Traceback|no replay" $O/loops.txt | head -5)
i=0
for side in off p1 p2 p2 p1 off; do
  i=$((i+1))
  tree=$side; flag=1
  if [ $side = off ]; then tree=p2; flag=0; fi
  (cd .gpu/$tree && echo "call $i $side rev $(cat REV) $(date +%T)" && GPUWB_SEVERAL_HELD=$flag PYTHONPATH=/tmp/site:$PWD timeout 55 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 45 --programs $L --json $O/u-$i-$side.json > $O/u-$i-$side.txt 2>&1
   echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$side.txt)
done
tar czf $OUT/o312.tgz -C /tmp o312
echo "end $(date +%T)"
