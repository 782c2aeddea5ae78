#!/bin/bash
# thirty-seventh session, run 215 (issue 50): a debug probe, not a benchmark. Run 214 still
# found device memory used after a swap-out in three memory tests (8-12 KB after a small loop
# in the lane, 4 MiB + 512 B after test_deferred_reads' loop). The worker, patched here only
# (held_patch.diff), lists at each swap-out the CuPy arrays and memory pointers of >= 512 B
# still alive and what refers to them (held_dump.py: run 211's, ../2026-11-28-h200-run211/,
# copied into .gpu/ with this directory's files), while the three tests run.
#   run(command="bash .gpu/run215.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o215; mkdir -p $O
cp .gpu/held_dump.py /tmp/
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
patch -p1 < ../held_patch.diff || exit 1
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_DEBUG_HELD=$O/held- GPUWB_DEBUG_HELD_MIN=512 GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 200 python3 -m pytest -q -p no:cacheprovider -n 3 \
  tests/gpu_backend/test_steady_lane.py tests/gpu_backend/test_deferred_reads.py -k "holds_no_more or dropped_with_its_reads_waiting" > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed" $O/t.txt | tail -3
for f in $O/held-*; do echo "### $f"; head -c 2500 $f; done
cd ../..
tar czf $OUT/o215.tgz -C /tmp o215
echo "end $(date +%T)"
