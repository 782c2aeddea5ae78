#!/bin/bash
# forty-fourth session, run 266 (issue 50): the standing at 50214fc (the upload captured in
# its graph, never stood on a GPU) in three calls, so that each program's ratio is a median
# of three side-by-side calls rather than one call inside the host's ±30 % spread; the GPU
# tests of held uploads (the capture's dtype rule, never GPU-run); program_phases.py over
# the programs still above local CuPy in runs 261 and 263.
#   run(command="bash .gpu/run266.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o266; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_held_uploads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -10 | cut -c1-300)
for i in 1 2 3; do
 (cd .gpu/new && echo "standing $i $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 125 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p$i.json > $O/p$i.txt 2>&1
  echo "programs rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|targets met|bitwise equal" $O/p$i.txt | cut -c1-110)
done
(cd .gpu/new && echo "phases $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 90 python3 benchmarks/program_phases.py --programs bootstrap_rng,ista_continuation,sgd_slices,kmeans,nbody,sgd_minibatch,conjugate_gradient --rounds 2 --devices 0 --json $O/ph.json > $O/ph.txt 2>&1
 echo "phases rc $?"; grep -vE "^ |^\{|^\}" $O/ph.txt | head -16 | cut -c1-300)
tar czf $OUT/o266.tgz -C /tmp o266
echo "end $(date +%T)"
