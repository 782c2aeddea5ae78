#!/bin/bash
# twenty-sixth session, run 131 (the end state, the lane's plan fixed): the second unseen-loop
# campaign (its steady-lane loops among them) against local CuPy.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run131.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o131
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
SECOND=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_more import PROGRAMS; print(','.join(PROGRAMS))")
timeout 260 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$SECOND" --json /tmp/o131/u.json > /tmp/o131/u.txt 2>&1
echo "unseen rc $?"; grep -E "programs, |no replay" /tmp/o131/u.txt; grep -c Traceback /tmp/o131/u.txt
tar czf $OUT/o131.tgz -C /tmp o131
echo "end $(date +%T)"
