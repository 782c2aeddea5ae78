#!/bin/bash
# thirty-second session, run 166 (issue 50): where a Generator loop's time goes now that its
# draws are made inside the graphs: replay_profile.py (client and worker cProfiles) of
# replay_sync's boot_step and of programs.py's bootstrap_rng and monte_carlo_pi_rng.
#   run(command="bash .gpu/run166.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o166; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop boot_step --reps 2000 --top 30 > $O/prof-boot_step.txt 2>&1
echo "boot_step rc $? $(date +%T)"; grep -E "an iteration|calls a message" $O/prof-boot_step.txt
sed -n '/=== worker/,$p' $O/prof-boot_step.txt | head -45 | cut -c1-150
for prog in bootstrap_rng monte_carlo_pi_rng; do
  timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop $prog --reps 5 --top 25 > $O/prof-$prog.txt 2>&1
  echo "$prog rc $? $(date +%T)"; grep -E "an iteration|a run|calls a message" $O/prof-$prog.txt | cut -c1-300
  sed -n '/=== worker/,$p' $O/prof-$prog.txt | head -36 | cut -c1-150
done
cd ../..
tar czf $OUT/o166.tgz -C /tmp o166
echo "end $(date +%T)"
