#!/bin/bash
# forty-second session, run 256 (issue 50): a device-bound step committed ahead before its
# reads (GPUWB_COMMIT_FIRST), side by side with the order before it (side nocommitfirst,
# each in a pool of its own), two calls; the GPU tests of pushes, the lane and deferred
# reads first; the phases of heat2d 2048² with it.
#   run(command="bash .gpu/run256.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o256; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "tests rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_deferred_reads.py tests/gpu_backend/test_pushed_mixed.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300)
P=heat2d_2048,nbody,fused_loop,heat2d,stencil,lr_decay,logistic_regression,chain20
for i in 1 2; do
  (cd .gpu/new && echo "call $i rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nocommitfirst --devices 0 --programs $P \
     --json $O/p-$i.json > $O/p-$i.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i.txt | cut -c1-130)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 24 \
     --programs heat2d_2048 --json $O/ph.json > $O/ph.txt 2>&1; echo "rc $?"; sed -n 2,3p $O/ph.txt | cut -c1-600; grep -o "push_first[^,]*, [^,]*" $O/ph.txt | head -2)
tar czf $OUT/o256.tgz -C /tmp o256
echo "end $(date +%T)"
