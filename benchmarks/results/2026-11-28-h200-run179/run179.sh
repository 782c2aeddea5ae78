#!/bin/bash
# thirty-third session, run 179 (issue 50): where the RandomState programs' time goes
# (langevin_annealed, random_walk, mc_option, monte_carlo_pi), step_profile.py with the
# workers' timelines, each beside local CuPy; the defaults and replay held (the lane's,
# run ahead's and pushes' figures from the pool's stretches).
#   run(command="bash .gpu/run179.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o179; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 200 python3 benchmarks/step_profile.py --devices 0 --rounds 3 --timeline \
  --programs langevin_annealed,random_walk,mc_option,monte_carlo_pi --json $O/s.json > $O/s.txt 2>&1
echo "step_profile rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/s.txt | head -40 | cut -c1-180
cd ../..
tar czf $OUT/o179.tgz -C /tmp o179
echo "end $(date +%T)"
