#!/bin/bash
# twenty-sixth session, run 126 (draws of a Generator run ahead, its state copied and put back):
# the GPU tests of draws ahead and remote random against local CuPy; the third unseen-loop
# campaign (16 drawing loops) against local CuPy; bootstrap_rng (the Generator API) and
# monte_carlo_pi with draws ahead on and off, the sides in both orders; CuPy's random tests.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run126.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o126
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/gpu_backend/test_draws_ahead.py tests/kernelproxy/test_remote_random.py tests/kernelproxy/test_fuse_programs.py \
  > /tmp/o126/t.txt 2>&1
echo "tests rc $?"; grep -E "passed|failed|^FAILED|^ERROR" /tmp/o126/t.txt | tail -8
DR=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_draws import PROGRAMS; print(','.join(PROGRAMS))")
timeout 100 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$DR" --json /tmp/o126/u.json > /tmp/o126/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, |no replay" /tmp/o126/u.txt; grep -c Traceback /tmp/o126/u.txt
n=0
for sides in ipc,ipc-nodraws ipc-nodraws,ipc; do
  n=$((n+1))
  timeout 100 python3 benchmarks/programs.py --rounds 5 --own-pools --transports $sides --devices 0 --policy share \
    --programs bootstrap_rng,monte_carlo_pi --json /tmp/o126/ab$n.json > /tmp/o126/ab$n.txt 2>&1
  echo "A/B $n ($sides) rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|bitwise equal" /tmp/o126/ab$n.txt | head -5
done
timeout 280 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders random --devices 0 --jobs 15 --subsample \
  --timeout 80,250 --keep /tmp/o126/suite --json /tmp/o126/suite.json > /tmp/o126/s.txt 2>&1
echo "suite rc $?"; tail -8 /tmp/o126/s.txt
tar czf $OUT/o126.tgz -C /tmp o126
echo "end $(date +%T)"
