#!/bin/bash
# fifty-second session, run 311 (issue 50): calls of several results held and replayed by a
# re-run of their records (GPUWB_SEVERAL_HELD, default on). In one tree: the GPU tests of
# several results and of stretch replay against local CuPy; the several-results campaigns
# (the ninth, and the thirteenth, new) and the other loops that make such calls, bit for bit
# against local CuPy, the switch on; the same loops timed against local CuPy with the switch
# off and on, calls off on on off; replay_sync.py's masked_step off and on (must not regress).
#   run(command="bash .gpu/run311.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o311; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
L=$(cat .gpu/loops.list)
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 \
  $(cat ../tests.list) > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
echo "loops rc $? $(date +%T)"; grep -E "programs, |Traceback|no replay" $O/loops.txt | head -5
i=0
for flag in 0 1 1 0; do
  i=$((i+1))
  echo "call $i several_held=$flag $(date +%T)"
  GPUWB_SEVERAL_HELD=$flag PYTHONPATH=/tmp/site:$PWD timeout 55 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 45 --programs $L --json $O/u-$i-$flag.json > $O/u-$i-$flag.txt 2>&1
  echo "rc $?"; grep -E "with problems|^all " $O/u-$i-$flag.txt
done
for flag in 0 1; do
  echo "masked_step several_held=$flag $(date +%T)"
  GPUWB_SEVERAL_HELD=$flag PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --devices auto --loops masked_step --reps 300 --json $O/rs-$flag.json > $O/rs-$flag.txt 2>&1
  echo "rc $?"; tail -6 $O/rs-$flag.txt | cut -c1-200
done
tar czf $OUT/o311.tgz -C /tmp o311
echo "end $(date +%T)"
