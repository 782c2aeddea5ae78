#!/bin/bash
# forty-seventh session, run 287 (issue 50): where a call of several results is issued with
# no wait, two designs side by side in one call (GPUWB_STRUCTURE_CUTS, a switch of this run's
# tree only): A (0) the call joins the stretch under way, which is then never held; B (1) the
# stretch so far ends before the call where it is held or may yet be (as before a large
# upload), and the call's batch ends after it, so that the ops around it are stretches that
# repeat. The unseen loops that call such functions and replay_sync.py's masked_step, calls
# A B B A.
#   run(command="bash .gpu/run287.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o287; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
P=sort_variants,astype_cumsum_sort,tuple_results,aliases_made_by_functions,multi_result_functions,split_pieces_written,view_functions_written,repro_split_piece_written,where_and_nonzero
i=0
for c in 0 1 1 0; do
  i=$((i+1))
  (cd .gpu/new && echo "call $i cuts=$c rev $(cat REV) $(date +%T)" && GPUWB_STRUCTURE_CUTS=$c PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/u-$i-$c.json > $O/u-$i-$c.txt 2>&1
   echo "rc $?"; grep -E "with problems" $O/u-$i-$c.txt
   GPUWB_STRUCTURE_CUTS=$c PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/replay_sync.py --reps 1000 --own-pools --devices 0 --policy share --transports ipc \
     --loops masked_step --json $O/m-$i-$c.json > $O/m-$i-$c.txt 2>&1; echo "rc $?"; grep -E "^(masked)" $O/m-$i-$c.txt | cut -c1-120)
done
tar czf $OUT/o287.tgz -C /tmp o287
echo "end $(date +%T)"
