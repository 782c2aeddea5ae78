#!/bin/bash
# forty-third session, run 260 (issue 50): a small upload inside a held stretch, after the
# review's mend (a large upload never keyed). The GPU tests of held uploads, the fast path,
# transfers, staging and stretch replay against local CuPy; replay_sync.py's minibatch_step
# and feed_step against the session's first tree (4482843, "old"), six calls old new new old
# new old... alternating; sgd_minibatch and mlp_training, old new new old.
#   run(command="bash .gpu/run260.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o260; mkdir -p $O
for tree in new old; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 170 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py tests/kernelproxy/test_stretch_fast_path.py tests/kernelproxy/test_transfers.py \
  tests/gpu_backend/test_staging.py tests/gpu_backend/test_stretch_replay.py tests/kernelproxy/test_structured_dtypes.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
i=0
for tree in old new new old old new; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc --loops minibatch_step,feed_step \
     --json $O/rs-$i-$tree.json > $O/rs-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(minibatch_step|feed_step)" $O/rs-$i-$tree.txt | cut -c1-110)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "programs $i $tree $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 75 python3 benchmarks/programs.py --rounds 7 --own-pools --transports ipc --devices 0 --programs sgd_minibatch,mlp_training \
     --json $O/ab-$i-$tree.json > $O/ab-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/ab-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o260.tgz -C /tmp o260
echo "end $(date +%T)"
