#!/bin/bash
# forty-second session, run 250 (issue 50): does committing a writing step ahead cost the
# worker-paced writing loops? programs.py with sides ipc and ipc-nocommitwrites (each in a
# pool of its own, GPUWB_COMMIT_WRITES=0 for the second), two calls; the random walk's
# phases with the new commit_saved mark.
#   run(command="bash .gpu/run250.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o250; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
P=random_walk,heat2d,stencil,lr_decay,heat2d_2048,logistic_regression
for i in 1 2; do
  (cd .gpu/new && echo "call $i rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nocommitwrites --devices 0 --programs $P \
     --json $O/p-$i.json > $O/p-$i.txt 2>&1; echo "rc $?"
   grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i.txt | cut -c1-130)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 24 \
     --programs random_walk --json $O/ph.json > $O/ph.txt 2>&1; echo "rc $?"; sed -n 2p $O/ph.txt | cut -c1-600)
tar czf $OUT/o250.tgz -C /tmp o250
echo "end $(date +%T)"
