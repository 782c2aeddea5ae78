#!/bin/bash
# forty-third session, run 259 (issue 50): a small upload inside a held stretch. The held
# uploads' GPU tests against local CuPy; replay_sync.py's new minibatch_step and feed_step
# (and the hot sync) against the session's first tree (4482843, "old": the new benchmark
# scripts over its library, where the upload cuts the step), replay on and off, old new new
# old; program_phases.py over sgd_minibatch on the old tree (run 258 has the new one's); then
# the standing: every program, one call.
#   run(command="bash .gpu/run259.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o259; mkdir -p $O
for tree in new old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc,ipc-nographs --loops minibatch_step,feed_step,hot_sync \
     --json $O/rs-$i-$tree.json > $O/rs-$i-$tree.txt 2>&1; echo "rc $?"
   grep -vE "^ |^\{|^\}" $O/rs-$i-$tree.txt | head -8 | cut -c1-150)
done
(cd .gpu/old && echo "phases old $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/program_phases.py --programs sgd_minibatch --rounds 3 --devices 0 --json $O/ph-old.json > $O/ph-old.txt 2>&1
 echo "phases rc $?"; grep -vE "^ |^\{|^\}" $O/ph-old.txt | head -6 | cut -c1-260)
(cd .gpu/new && echo "standing $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
 echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p.txt | cut -c1-110)
tar czf $OUT/o259.tgz -C /tmp o259
echo "end $(date +%T)"
