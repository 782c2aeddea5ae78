#!/bin/bash
# fortieth session, run 241 (issue 50): a drawing stretch whose parameters change run ahead
# only once its guess is warm (langevin_annealed in the lane on the VM). The GPU tests of
# draws ahead, the lane, pushes, run ahead and remote random against local CuPy; the
# drawing programs against the session's first tree (0650c74, "old": the new benchmark
# scripts over its library), calls old new new old.
#   run(command="bash .gpu/run241.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o241; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_run_ahead.py \
  tests/gpu_backend/test_pushed_replies.py tests/kernelproxy/test_remote_random.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
P=langevin_annealed,random_walk,monte_carlo_pi,mc_option
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
tar czf $OUT/o241.tgz -C /tmp o241
echo "end $(date +%T)"
