#!/bin/bash
# thirty-second session, run 170 (issue 50): the session's end state against local CuPy: the
# GPU tests of draws, replay, the steady lane, pushed replies and captured products; the two
# drawing unseen-loop campaigns; the Generator programs side by side with their draws eager.
#   run(command="bash .gpu/run170.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o170; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_pushed_mixed.py tests/gpu_backend/test_captured_products.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
for part in unseen_loop_bodies_graphed_draws unseen_loop_bodies_draws; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
for i in 1 2; do
  timeout 60 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nographdraws --devices 0 \
    --programs bootstrap_rng,monte_carlo_pi_rng,monte_carlo_pi --json $O/p-$i.json > $O/p-$i.txt 2>&1
  echo "programs $i rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i.txt | cut -c1-120
done
cd ../..
tar czf $OUT/o170.tgz -C /tmp o170
echo "end $(date +%T)"
