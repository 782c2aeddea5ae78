#!/bin/bash
# forty-second session, run 255 (issue 50): a drawing step that writes committed ahead where
# it writes at most 1 MiB (SAVED_EAGER_MOST), against the session's first tree (bc062ed,
# "old"), calls old new new old: replay_sync.py's drawing loops and the hot sync, then the
# drawing programs, five rounds a call; the GPU tests of pushes and draws ahead first.
#   run(command="bash .gpu/run255.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o255; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "tests rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_draws_ahead.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 50 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops hot_sync,walk_step,pi_step,boot_step,anneal_step --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^(hot|walk|pi_|boot|anneal)|raw round" $O/r-$i-$tree.txt | cut -c1-100)
done
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc --devices 0 --programs random_walk,langevin_annealed,mc_option,monte_carlo_pi,hot_sync \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o255.tgz -C /tmp o255
echo "end $(date +%T)"
