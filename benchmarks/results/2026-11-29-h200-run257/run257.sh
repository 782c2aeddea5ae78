#!/bin/bash
# forty-second session, run 257 (issue 50): a commit made before its reads learns its
# measurement after their wait (a review's find: run 256 measured 473 of 773 lane answers);
# the GPU tests of pushes and of the lane's measuring; heat2d 2048²'s phases (lane_measured)
# and heat2d 2048² and n-body committed first or not, one call.
#   run(command="bash .gpu/run257.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o257; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "tests rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_lane_measures.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300)
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 30 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 12 \
     --programs heat2d_2048 --json $O/ph.json > $O/ph.txt 2>&1; echo "rc $?"; sed -n 2p $O/ph.txt | cut -c1-400
 python3 -c "import json; s=json.load(open('$O/ph.json'))['programs']['heat2d_2048']['stretches']; print({k: s.get(k) for k in ('lane_measured', 'lane', 'push_first', 'push_first_undone')})")
(cd .gpu/new && echo "programs $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nocommitfirst --devices 0 --programs heat2d_2048,nbody \
     --json $O/p.json > $O/p.txt 2>&1; echo "rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p.txt | cut -c1-130)
tar czf $OUT/o257.tgz -C /tmp o257
echo "end $(date +%T)"
