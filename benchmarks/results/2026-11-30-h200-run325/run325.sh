#!/bin/bash
# fifty-sixth session, run 325 (issue 51). (0) A traced pass of `share` on the two scenarios
# whose one-second error is missed (sync-1:2:4, many-sync), the arbiter's decisions kept: each
# user's charge per batch, to see whether the charges' noise batch by batch is white (what
# smoothing them would take out) or follows the others. (1) `none` beside `share` on the four
# scenarios not yet measured since paced replays are kept held (run 323's pass ran past its
# limit): sync-long-vs-small, interactive+2048, mixed-1:2:4, dl-mix, 8 s. (2) the unseen
# loops' floors (program_floor.py --unseen), never run on a GPU, with the time left.
#   run(command="bash .gpu/run325.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o325; mkdir -p $O
save() { tar czf $OUT/o325.tgz -C /tmp o325; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
mkdir -p $O/tr
GPUWB_PACING_TRACE=$O/tr timeout 120 python3 benchmarks/fairness.py --policies share --calibrate none \
  --scenarios sync-1:2:4,many-sync --long 8192 --seconds 8 --calibrate-seconds 1 --lead 2 --devices 0 \
  --json $O/t.json > $O/t.txt 2>&1
echo "traced rc $? $(date +%T)"
(cd $O/tr && for f in *-arbiter.jsonl; do gzip -c "$f" > $O/"$f".gz; done; ls -la $O)
rm -rf $O/tr; save
grep -E "^(sync-1:2:4|many-sync) " $O/t.txt | cut -c1-110
timeout 270 python3 benchmarks/fairness.py --policies none,share --calibrate none \
  --scenarios sync-long-vs-small,interactive+2048,mixed-1:2:4,dl-mix --long 8192 --seconds 8 \
  --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w.json > $O/w.txt 2>&1
echo "work pass rc $? $(date +%T)"; save
grep -E "^(sync-long-vs-small|interactive\+2048|mixed-1:2:4|dl-mix) " $O/w.txt | cut -c1-130
LEFT=$((560 - ($(date +%s) - T0)))
if [ $LEFT -gt 60 ]; then
  timeout $LEFT python3 benchmarks/program_floor.py --unseen --budget $((LEFT - 40)) \
    --json $O/floor.json > $O/floor.txt 2>&1
  echo "floor rc $? $(date +%T)"; save
  tail -5 $O/floor.txt
fi
echo "lost or malformed: $(cat $O/t.txt $O/w.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
