#!/bin/bash
# forty-seventh session, run 292 (issue 50): the ninth unseen campaign (twelve loops that call
# functions of several results or where(c, x, y) each step, written after the change): bit
# for bit against local CuPy (unseen_loops.py --local cupy), then timed against the
# session's first tree (5060fba, "old": the new benchmark scripts over its library), calls
# old new new old.
#   run(command="bash .gpu/run292.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o292; mkdir -p $O
for tree in old new; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
cp .gpu/new/benchmarks/*.py .gpu/old/benchmarks/
P=leaky_relu_where_step,divmod_clock,split_into_chunks,meshgrid_field_step,unique_counts_and_histogram,orthogonal_iteration,gradient_of_a_field,modf_frexp_no_read,split_refused_then_fine,nonzero_of_a_fresh_mask,atleast_and_broadcast,long_step_with_divmod_inside
(cd .gpu/new && echo "loops rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $P --json $O/loops.json > $O/loops.txt 2>&1
 echo "rc $?"; grep -E "programs, |no replay" $O/loops.txt)
i=0
for tree in old new new old; do
  i=$((i+1))
  (cd .gpu/$tree && echo "call $i $tree rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$tree.json > $O/u-$i-$tree.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$tree.txt)
done
tar czf $OUT/o292.tgz -C /tmp o292
echo "end $(date +%T)"
