#!/bin/bash
# thirty-third session, run 174 (issue 50): a ufunc call's scalars and a distribution's
# leading ones made stretch parameters. The GPU tests of replay's scalars, draws and the
# new rule against local CuPy; the first unseen-loop campaign (functions given scalars)
# and the fifth (scalars that change through calls) against local CuPy.
#   run(command="bash .gpu/run174.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o174; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/kernelproxy/test_call_scalars_as_params.py tests/kernelproxy/test_replay_scalars_and_errors.py \
  tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_draws_ahead.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
for part in unseen_loop_bodies_call_scalars unseen_loop_bodies; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
grep -E "^[a-z_0-9]+ +n= " $O/unseen_loop_bodies_call_scalars.txt | cut -c1-150
cd ../..
tar czf $OUT/o174.tgz -C /tmp o174
echo "end $(date +%T)"
