#!/bin/bash
# fifty-seventh session, run 333: fairness.py --interleave (new) on a GPU, the two pools open
# at once; interactive+2048 and alone-sync, none and share back to back, 4 s (the session's
# last ~150 s of device time). Not run in the fifty-seventh session: too little device time
# was left to start a machine; for the next session.
#   run(command="bash .gpu/run333.sh", carry=[".whl", ".gpu"], timeout_s=110)
set -u
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o333; mkdir -p $O
save() { tar czf $OUT/o333.tgz -C /tmp o333; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
timeout 85 python3 benchmarks/fairness.py --policies none,share --calibrate none --interleave \
  --scenarios interactive+2048,alone-sync --seconds 4 --calibrate-seconds 2 --lead 2 \
  --devices 0 --json $O/w1.json > $O/w1.txt 2>&1
echo "rc $? $(date +%T)"; save
grep -E "^(interactive\+2048|alone-sync) |done$" $O/w1.txt | cut -c1-120
