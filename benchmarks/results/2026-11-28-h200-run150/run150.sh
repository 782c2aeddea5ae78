#!/bin/bash
# thirtieth session, run 150 (issue 50): a step that draws committed ahead of its message,
# its draws tentative (worker/draw_journal.py), and a kept view alone in its memory handed out
# as a copy (worker/kept_views.py: CuPy's odd-sized normal draw, a temporary's view). Two
# clean exports: .gpu/clean (this tree) and .gpu/prev (defaeed, the tree before). GPU tests
# against local CuPy on this tree; replay_sync.py (this tree's script) and programs.py (each
# tree's own) on the drawing loops, prev clean clean prev; the three unseen-loop campaigns
# against local CuPy on this tree.
#   run(command="bash .gpu/run150.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o150; mkdir -p $O
for tree in clean prev; do
  (cd .gpu/$tree && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
done
echo "revs $(cat .gpu/clean/REV) $(cat .gpu/prev/REV) $(date +%T)"
(cd .gpu/clean && PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_pushed_replies.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_steady_lane.py \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_pushed_mixed.py > $O/t.txt 2>&1)
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
SCRIPT=$PWD/.gpu/clean/benchmarks/replay_sync.py
PROGS=monte_carlo_pi,mc_option,bootstrap_rng,random_walk,hot_sync,chain20
i=0
for tree in prev clean clean prev; do
  i=$((i+1))
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 $SCRIPT --devices 0 --reps 1000 --own-pools --transports ipc \
    --loops pi_step,walk_step,hot_sync --json $O/r-$i-$tree.json > $O/r-$i-$tree.txt 2>&1)
  echo "replay_sync $tree rc $? $(date +%T)"; grep -E "^(pi_step|walk|hot|raw)" $O/r-$i-$tree.txt | cut -c1-110
  (cd .gpu/$tree && PYTHONPATH=/tmp/site:$PWD timeout 70 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 \
    --programs $PROGS --json $O/p-$i-$tree.json > $O/p-$i-$tree.txt 2>&1)
  echo "programs $tree rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|^ipc: [0-9]" $O/p-$i-$tree.txt | cut -c1-100
done
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
for part in unseen_loop_bodies_draws unseen_loop_bodies unseen_loop_bodies_more; do
  NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from $part import PROGRAMS; print(','.join(PROGRAMS))")
  timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
  grep -E "^(draws_changing_size|only_views_of_results_kept|several_reads|arg_reads) " $O/$part.txt
done
cd ../..


# the diagnostic: why two loops replay through graphs less often on a GPU than on the NumPy
# device (runs 148-149 against the VM): a copy of this tree that prints each capture's failure
cp -r .gpu/clean /tmp/diag && python3 .gpu/diag_patch.py /tmp/diag
(cd /tmp/diag && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_loops.py --devices 0 --local cupy \
  --programs arg_reads_feed_back,several_reads_per_iteration > $O/diag.txt 2>&1)
grep -E "DIAG|^(arg_reads|several)" $O/diag.txt | sort | uniq -c | sort -rn | head -20 | cut -c1-400
tar czf $OUT/o150.tgz -C /tmp o150
echo "end $(date +%T)"
