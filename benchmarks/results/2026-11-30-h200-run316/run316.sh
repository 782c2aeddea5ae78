#!/bin/bash
# fifty-fourth session, run 316 (issue 50): what the fifty-third session built after run 315,
# on a GPU, and the floor of every curated program. (1) The GPU tests of kept pieces judged,
# histogram's predicted pieces, the settled/undecided calls and the compiled __del__'s ^C;
# (2) program_floor.py: each curated program's device busy time on local CuPy (CUPTI
# through PyTorch's profiler) over its wall time, the least ratio any pool can reach; (3) the
# fourteenth campaign (kept pieces) and svd_each_step bit for bit against local CuPy, then
# timed joined (the default) and cut (GPUWB_SEVERAL_JOIN=0), join cut; (4) the curated
# programs against local CuPy, speed and bits. Outputs packed into $OUT after each step.
#   run(command="bash .gpu/run316.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o316; mkdir -p $O
save() { tar czf $OUT/o316.tgz -C /tmp o316; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
L=qr_pieces_kept,svd_of_a_wide_matrix_kept,eigh_values_kept_in_a_list,histogram_counts_each_step,histogram_of_fixed_edges,divmod_of_a_fresh_temporary_no_sync,split_of_a_temporary_kept_no_sync,hsplit_of_a_temporary_fed_on,modf_accumulated_no_sync,frexp_exponents_kept,svd_each_step
cd .gpu/new
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 90 python3 -m pytest -q -p no:cacheprovider -n 8 \
  tests/gpu_backend/test_kept_views_judged.py tests/kernelproxy/test_result_structures.py \
  tests/kernelproxy/test_result_structures_edges.py tests/kernelproxy/test_divmod_pair.py \
  tests/kernelproxy/test_split_views.py tests/kernelproxy/test_held_ops.py tests/kernelproxy/test_several_held.py \
  tests/gpu_backend/test_several_between.py tests/gpu_backend/test_kept_views_apart.py \
  tests/gpu_backend/test_never_graphed.py tests/project/test_program_floor.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; save; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -8 | cut -c1-300
PYTHONPATH=/tmp/site:$PWD timeout 140 python3 benchmarks/program_floor.py --rounds 3 --json $O/floor.json > $O/floor.txt 2>&1
echo "floor rc $? $(date +%T)"; save; grep -vE '^ |^\{|^\}' $O/floor.txt | head -40 | cut -c1-200
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $L \
  --json $O/loops.json > $O/loops.txt 2>&1
echo "loops rc $? $(date +%T)"; save; grep -E "programs, |Traceback|no replay" $O/loops.txt | head -5
i=0
for side in join cut; do
  i=$((i+1)); flag=0; [ $side = join ] && flag=1
  echo "call $i $side $(date +%T)"
  GPUWB_SEVERAL_JOIN=$flag PYTHONPATH=/tmp/site:$PWD timeout 45 python3 benchmarks/unseen_speed.py --devices 0 --rounds 2 --budget 36 --programs $L --json $O/u-$i-$side.json > $O/u-$i-$side.txt 2>&1
  echo "rc $?"; save; grep -E "with problems|^all |not begun" $O/u-$i-$side.txt
done
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p.json > $O/p.txt 2>&1
echo "programs rc $? $(date +%T)"; save; grep -E "bitwise|programs|<= 1.0" $O/p.txt | tail -6 | cut -c1-300
echo "end $(date +%T)"
