#!/bin/bash
# forty-fifth session, run 277 (issue 50): downloads through graphs measured side by side on
# one host: the 19 unseen loops whose downloads went through graphs in run 276, timed by
# unseen_speed.py with the tree before (b9afd3e, .gpu/old) and this one (.gpu/new), old new
# new old.
#   run(command="bash .gpu/run277.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o277; mkdir -p $O
P=overlapping_self_writes,aliased_inputs_alternating,download_every_few_iterations,tolist_and_views_downloaded,late_input_switches,repr_and_format_reads,unsendable_int_mid_loop,repro_nan_sign_literal,repro_unsendable_int_temporary,float16_accumulate,zero_d_only,ellipsis_write_alias,astype_copy_false_alias,integer_negative_power,ahead_downloads,graphed_two_generators,nan_floor,dtype_given_to_the_call,batch_kept_past_the_loop_then_written
for t in old new; do (cd .gpu/$t && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null); done
for t in old new new2 old2; do d=${t%2}
 (cd .gpu/$d && echo "$t rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --programs $P --json $O/$t.json > $O/$t.txt 2>&1
  echo "rc $?"; grep -A2 "^campaign" $O/$t.txt | cut -c1-100)
done
tar czf $OUT/o277.tgz -C /tmp o277
echo "end $(date +%T)"
