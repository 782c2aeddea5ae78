#!/bin/bash
# thirty-fifth session, run 195 (issue 50): where the drawing loops' time goes at a80ff26 (their draws and inputs gathered by the graphs), the
# programs furthest from local CuPy (langevin_annealed 3.37x, random_walk 2.18x, mc_option and
# bootstrap_rng 1.73x in run 189): cProfiles of client and worker (replay_profile.py) and the
# worker's spans beside the client's waits (step_profile.py --timeline).
#   run(command="bash .gpu/run195.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o195; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 150 python3 benchmarks/step_profile.py --devices 0 --rounds 3 --timeline \
  --programs langevin_annealed,random_walk,mc_option,monte_carlo_pi,monte_carlo_pi_rng --json $O/s.json > $O/s.txt 2>&1
echo "step_profile rc $? $(date +%T)"; grep -E "proxy|local|worker busy" $O/s.txt
for loop in langevin_annealed random_walk mc_option monte_carlo_pi; do
  timeout 90 python3 benchmarks/replay_profile.py --devices 0 --loop $loop --reps 5 --top 45 > $O/prof-$loop.txt 2>&1
  echo "$loop rc $? $(date +%T)"; grep -E " on ipc under " $O/prof-$loop.txt | cut -c1-400
done
cd ../..
tar czf $OUT/o195.tgz -C /tmp o195
echo "end $(date +%T)"
