#!/bin/bash
# forty-second session, run 251 (issue 50): the float guess's long run first and a drawing
# writing step no longer committed ahead, against the session's first tree (bc062ed, "old":
# the new benchmark scripts over its library), calls old new new old; the phases of the
# random walk and of heat2d 2048² (a commit's copy aside: its allocation, its copy).
#   run(command="bash .gpu/run251.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o251; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
(cd .gpu/new && echo "tests rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_float_steps.py tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_steady_lane.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
P=random_walk,monte_carlo_pi,langevin_annealed,heat2d_2048,lr_decay,hot_sync,chain20
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs $P \
     --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i-$tree.txt | cut -c1-110)
done
for p in random_walk heat2d_2048; do
  (cd .gpu/new && echo "phases $p $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 24 \
     --programs $p --json $O/ph-$p.json > $O/ph-$p.txt 2>&1; echo "rc $?"; sed -n 2,3p $O/ph-$p.txt | cut -c1-700)
done
tar czf $OUT/o251.tgz -C /tmp o251
echo "end $(date +%T)"
