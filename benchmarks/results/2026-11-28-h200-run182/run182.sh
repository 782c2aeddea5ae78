#!/bin/bash
# thirty-third session, run 182 (issue 50): the review's mends (a parameter's buffer dtype from
# every array argument, a ufunc call given dtype= eager, a baked draw's value as sent) against
# local CuPy: the call-scalars and stretch-replay tests, the call-scalars campaign (15 loops);
# and sgd_slices (minibatches sliced at a moving offset: not held) beside sgd_minibatch.
#   run(command="bash .gpu/run182.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o182; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_call_scalars_as_params.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_call_scalars import PROGRAMS; print(','.join(PROGRAMS))")
timeout 90 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/u.json > $O/u.txt 2>&1
echo "campaign rc $? $(date +%T)"; grep -E "programs, " $O/u.txt | cut -c1-200; grep -c Traceback $O/u.txt
grep -E "^(dtype_given_to_the_call|clip_by_a_float64_array) +n=" $O/u.txt | cut -c1-130
timeout 90 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --programs sgd_slices,sgd_minibatch --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|replays of held" $O/p.txt | cut -c1-130
cd ../..
tar czf $OUT/o182.tgz -C /tmp o182
echo "end $(date +%T)"
