#!/bin/bash
# twenty-eighth session, run 145 (issue 50): the first two unseen-loop campaigns against local
# CuPy on this tree (the lane's writing steps, pushed replies over early ones) — run 144's
# limit of 100 s each was too short for them (its third campaign, the draws, 16 of 16).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run145.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o145; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for part in unseen_loop_bodies unseen_loop_bodies_more; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 240 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, |no replay" $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
tar czf $OUT/o145.tgz -C /tmp o145
echo "end $(date +%T)"
