#!/bin/bash
# thirty-seventh session, run 212 (issue 50): cProfiles of the worker (and client) for the
# programs whose worker sets their pace in run 210's program_phases.py: Monte Carlo pi (its
# lane's eager draws 206 us a message), loss_and_accuracy (after_reply 125 us a message),
# bootstrap_rng (received 82 us a message), mc_option.
#   run(command="bash .gpu/run212.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o212; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for loop in monte_carlo_pi loss_and_accuracy bootstrap_rng mc_option; do
  timeout 100 python3 benchmarks/replay_profile.py --devices 0 --loop $loop --reps 5 --top 45 > $O/prof-$loop.txt 2>&1
  echo "$loop rc $? $(date +%T)"; grep -E " on ipc under " $O/prof-$loop.txt | cut -c1-300
done
cd ../..
tar czf $OUT/o212.tgz -C /tmp o212
echo "end $(date +%T)"
