#!/bin/bash
# fiftieth session, run 307 (issue 50): is the client's timing of held stretches (let go
# where replays are not faster, GPUWB_REPLAY_MEASURED=1, the default) right on a GPU? In
# run 304 99 of the 292 unseen loops had a stretch let go, their median 1.77x local against
# 1.32x for the rest; in run 306 loops whose replays were faster (1.3x held, 1.7x let go)
# were let go in some calls. The 113 loops with a stretch let go in runs 304 or 306 (and the
# schedules campaign), timed with the timing on ("measured") and off ("held"), calls
# measured held held measured; then the curated programs once each way.
#   run(command="bash .gpu/run307.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o307; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
L=$(cat .gpu/loops.list)
i=0
for side in measured held held measured; do
  i=$((i+1)); m=1; [ $side = held ] && m=0
  (cd .gpu/new && echo "call $i $side rev $(cat REV) $(date +%T)" && GPUWB_REPLAY_MEASURED=$m PYTHONPATH=/tmp/site:$PWD timeout 110 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --budget 100 --programs $L --json $O/u-$i-$side.json > $O/u-$i-$side.txt 2>&1
   echo "rc $? $(date +%T)"; grep -E "with problems|^all |not begun" $O/u-$i-$side.txt | tail -3 | cut -c1-200)
done
for side in measured held; do
  m=1; [ $side = held ] && m=0
  (cd .gpu/new && echo "programs $side $(date +%T)" && GPUWB_REPLAY_MEASURED=$m PYTHONPATH=/tmp/site:$PWD timeout 65 python3 benchmarks/programs.py --rounds 3 --own-pools --transports ipc --devices 0 --json $O/p-$side.json > $O/p-$side.txt 2>&1
   echo "rc $?"; grep -E "targets met" $O/p-$side.txt | head -2)
done
tar czf $OUT/o307.tgz -C /tmp o307
echo "end $(date +%T)"
