#!/bin/bash
# thirty-second session, run 171 (issue 50): the Generator programs' floor on local CuPy
# (draw_floor.py: a step eager, as one captured graph read each step, and the graph's device
# time back to back) and where the bootstrap's time goes through the pool (step_profile.py
# --timeline).
#   run(command="bash .gpu/run171.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o171; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/draw_floor.py --json $O/floor.json > $O/floor.txt 2>&1
echo "floor rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/floor.txt | head -8
timeout 120 python3 benchmarks/step_profile.py --programs bootstrap_rng,monte_carlo_pi_rng --rounds 3 --devices 0 --timeline \
  --json $O/steps.json > $O/steps.txt 2>&1
echo "step_profile rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/steps.txt | head -30 | cut -c1-200
cd ../..
tar czf $OUT/o171.tgz -C /tmp o171
echo "end $(date +%T)"
