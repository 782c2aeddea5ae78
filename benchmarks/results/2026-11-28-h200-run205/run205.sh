#!/bin/bash
# thirty-sixth session, run 205 (issue 50): how each message of the drawing programs is served on
# a GPU, and why the lane declined its runs ahead (lane_declined) and what the client sent early.
#   run(command="bash .gpu/run205.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o205; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 200 python3 benchmarks/worker_phases.py --devices 0 --rounds 5 \
  --programs mc_option,random_walk,monte_carlo_pi,langevin_annealed,bootstrap_rng,monte_carlo_pi_rng,chain20 \
  --top 14 --json $O/w.json > $O/w.txt 2>&1
echo "phases rc $? $(date +%T)"; grep -v '^ *"\|^{\|^}\|^ *[]}0-9]' $O/w.txt | cut -c1-900
cd ../..
tar czf $OUT/o205.tgz -C /tmp o205
echo "end $(date +%T)"
