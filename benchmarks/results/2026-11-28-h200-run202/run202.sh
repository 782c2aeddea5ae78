#!/bin/bash
# thirty-sixth session, run 202 (issue 50): where each program's worker spends a message on a
# GPU, phase by phase, the steady lane's run ahead in its parts (benchmarks/worker_phases.py,
# new): the drawing programs furthest from local CuPy beside chain20 and the hot sync; and the
# host's cost of each CUDA call (worker_calls_probe.py) as this host's reference.
#   run(command="bash .gpu/run202.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o202; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 240 python3 benchmarks/worker_phases.py --devices 0 --rounds 5 \
  --programs mc_option,monte_carlo_pi,random_walk,langevin_annealed,bootstrap_rng,monte_carlo_pi_rng,chain20,hot_sync,ista_continuation,fused_loop \
  --top 16 --json $O/w.json > $O/w.txt 2>&1
echo "worker_phases rc $? $(date +%T)"; grep -v '^ \|^{\|^}' $O/w.txt | cut -c1-700
timeout 120 python3 benchmarks/worker_calls_probe.py --json $O/c.json > $O/c.txt 2>&1
echo "calls rc $? $(date +%T)"; head -20 $O/c.txt
cd ../..
tar czf $OUT/o202.tgz -C /tmp o202
echo "end $(date +%T)"
