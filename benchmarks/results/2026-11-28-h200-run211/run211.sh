#!/bin/bash
# thirty-seventh session, run 211 (issue 50): a debug probe, not a benchmark. Run 210 found
# 4 MiB + 512 B of device memory used after the swap-out in test_deferred_reads.py's memory
# test, and the lane's power-iteration memory test 10 KB over. The probe (probe_held.py) runs
# that loop with GPUWB_DEFER_READS 0 and always in a worker patched (held_patch.diff, applied
# here only) to list, at the swap-out, the CuPy arrays and memory pointers of >= 1 MiB and what
# refers to them (held_dump.py); then power iteration with the lane and without, its graph
# bytes beside its memory.
#   run(command="bash .gpu/run211.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o211; mkdir -p $O
cp .gpu/held_dump.py /tmp/
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
patch -p1 < ../held_patch.diff || exit 1
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
DEV=0 timeout 200 python3 ../probe_held.py 0 always 2>&1 | tail -12
for f in $O/held-*.txt; do echo "### $f"; head -c 6000 $f; done
cd ../..
tar czf $OUT/o211.tgz -C /tmp o211
echo "end $(date +%T)"
