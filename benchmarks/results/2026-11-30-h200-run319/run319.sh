#!/bin/bash
# fifty-fourth session, run 319. (1) program_floor.py with each program's set-up (its loop
# count at 0) timed and profiled as well: the floor of a pool that runs the same kernels
# and the same host code; (2) program_phases.py: where the worker's time goes a message in
# the syncing programs the floor says a pool could bring under 0.5x (issue 50's design
# question: what a compiled lane would have to replace); (3) issue 51's two scenarios whose
# share error is missed (sync-1:2:4, many-sync): none, share, and share with the two knobs
# that each met one of them in run 305 together (share+window8+deeplead0), one pass.
#   run(command="bash .gpu/run319.sh", carry=[".whl", ".gpu"])
set -u
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o319; mkdir -p $O
save() { tar czf $OUT/o319.tgz -C /tmp o319; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 170 python3 benchmarks/program_floor.py --rounds 3 --json $O/floor.json > $O/floor.txt 2>&1
echo "floor rc $? $(date +%T)"; save; grep -vE '^ |^\{|^\}|UserWarning' $O/floor.txt | head -40 | cut -c1-200
timeout 100 python3 benchmarks/program_phases.py --programs hot_sync,random_walk,langevin_annealed,monte_carlo_pi --rounds 3 --devices 0 --json $O/phases.json > $O/phases.txt 2>&1
echo "phases rc $? $(date +%T)"; save
timeout 250 python3 benchmarks/fairness.py --policies none,share,share+window8+deeplead0 --calibrate none \
  --scenarios sync-1:2:4,many-sync --long 8192 --seconds 5 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f.json > $O/f.txt 2>&1
echo "fairness rc $? $(date +%T)"; save
grep -vE '^ |^\{|^\}|^->|refused|done$' $O/f.txt | cut -c1-150 | head -30
echo "lost or malformed: $(grep -cE 'SessionLost|malformed requests|ended this session' $O/f.txt)"
echo "end $(date +%T)"
