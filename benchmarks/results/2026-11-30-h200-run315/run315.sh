#!/bin/bash
# fifty-third session, run 315 (issue 50): calls of several results join their held stretch
# by default now, and a call not settled (divmod of an operand whose dtype, split of an
# array whose shape the client does not know yet) goes in a batch of its own always. The
# change's GPU tests; the 26 several-results loops bit for bit against local CuPy; the same
# loops timed against local CuPy, the default (join) against GPUWB_SEVERAL_JOIN=0 (cut),
# calls cut join join cut. Outputs packed into $OUT after each step (kept if the time runs out).
#   run(command="bash .gpu/run315.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o315; mkdir -p $O
save() { tar czf $OUT/o315.tgz -C /tmp o315; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
L=$(cat .gpu/loops.list)
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 70 python3 -m pytest -q -p no:cacheprovider -n 8 \
  $(cat ../tests.list) > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; save; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
echo "loops rc $? $(date +%T)"; save; grep -E "programs, |Traceback|no replay" $O/loops.txt | head -5
i=0
for side in cut join join cut; do
  i=$((i+1)); flag=0; [ $side = join ] && flag=1
  echo "call $i $side $(date +%T)"
  GPUWB_SEVERAL_JOIN=$flag PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/unseen_speed.py --devices 0 --rounds 2 --budget 36 --programs $L --json $O/u-$i-$side.json > $O/u-$i-$side.txt 2>&1
  echo "rc $?"; save; grep -E "with problems|^all |not begun" $O/u-$i-$side.txt
done
echo "end $(date +%T)"
