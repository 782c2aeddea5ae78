#!/bin/bash
# twenty-seventh session, run 138 (issue 50, replies pushed and committed ahead): the three
# unseen-loop campaigns (190 loop programs the tests have not seen) through the pool against
# local CuPy, with the defaults (pushes on), each in its own call of unseen_loops.py; the
# pushes each campaign's sessions took, from the JSON.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run138.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o138; mkdir -p $O
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for part in unseen_loop_bodies unseen_loop_bodies_more unseen_loop_bodies_draws; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 170 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $?"; grep -E "programs, |no replay" $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
tar czf $OUT/o138.tgz -C /tmp o138
echo "end $(date +%T)"
