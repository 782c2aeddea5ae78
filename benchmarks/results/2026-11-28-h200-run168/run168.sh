#!/bin/bash
# thirty-second session, run 168 (issue 50): where SGD's, loss_and_accuracy's and n-body's
# time goes (replay_profile.py: client and worker cProfiles, whole programs); and boot_step's
# worker with the Generator's state copied into pool memory (no array made).
#   run(command="bash .gpu/run168.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o168; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop boot_step --reps 2000 --top 30 > $O/prof-boot_step.txt 2>&1
echo "boot_step rc $? $(date +%T)"; grep -E "an iteration|calls a message" $O/prof-boot_step.txt | cut -c1-120
grep -E "memcpyAsync|before_stateful|generator_state|alloc" $O/prof-boot_step.txt | head -6 | cut -c1-150
for prog in sgd_minibatch loss_and_accuracy nbody; do
  timeout 70 python3 benchmarks/replay_profile.py --devices 0 --loop $prog --reps 5 --top 28 > $O/prof-$prog.txt 2>&1
  echo "$prog rc $? $(date +%T)"; grep -E "an iteration|a run|calls a message" $O/prof-$prog.txt | cut -c1-400
  sed -n '/=== client/,/=== worker/p' $O/prof-$prog.txt | sed -n 5,22p | cut -c1-150
  sed -n '/=== worker/,$p' $O/prof-$prog.txt | sed -n 8,40p | cut -c1-150
done
cd ../..
tar czf $OUT/o168.tgz -C /tmp o168
echo "end $(date +%T)"
