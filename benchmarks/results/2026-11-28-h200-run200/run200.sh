#!/bin/bash
# thirty-fifth session, run 200 (issue 50): the steady lane's memory test
# (test_a_loop_in_the_lane_holds_no_more_arrays_than_without_it[_power_iteration]) failed in runs
# 198 and 199 (40 960 bytes with the lane against 30 720 without) and passed in run 196: its
# figures three times for the tree of run 196 (af5b187) and HEAD, each read again 0.2 s later.
#   run(command="bash .gpu/run200.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o200; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
   echo "tree $tree rev $(cat REV) $(date +%T)"
   PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 timeout 100 python3 ../lane_memory.py $PWD 2>&1 | tail -6 | tee $O/m-$tree.txt)
done
tar czf $OUT/o200.tgz -C /tmp o200
echo "end $(date +%T)"
