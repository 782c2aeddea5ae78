#!/bin/bash
# fifty-fifth session, run 323 (issue 51). Runs 321-322 priced only 5-14 % of the syncing
# users' device time: the worker's replies called a replay re-run paced beside others (on
# purpose, worker/stretch_replay.py) one whose graphs did not serve, so the client dropped
# the stretch as stale after three and let it go after two re-offers, and the loops ran as
# ordinary batches. Now such replies say ``f`` 2 and the stretch stays held. Here, in one
# run: (0) a traced pass of share+priced, to see the replays priced (own / busy by user);
# (1) none, share with the old replies (share+pacedstale), share unpriced and share priced,
# sync-1:2:4 and many-sync, 10 s; (2) the same four policies on sync-long-vs-small,
# interactive+2048, mixed-1:2:4 and dl-mix, 6 s; (3) pass (1) again if time is left.
#   run(command="bash .gpu/run323.sh", carry=[".whl", ".gpu"])
set -u
T0=$(date +%s)
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o323; mkdir -p $O
save() { tar czf $OUT/o323.tgz -C /tmp o323; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
mkdir -p $O/tr
GPUWB_PACING_TRACE=$O/tr timeout 50 python3 benchmarks/fairness.py --policies share+priced --calibrate none \
  --scenarios sync-1:2:4 --long 8192 --seconds 4 --calibrate-seconds 1 --lead 2 --devices 0 > $O/t.txt 2>&1
echo "traced rc $? $(date +%T)"
python3 - $O/tr <<'PY'
import json, pathlib, sys
for f in pathlib.Path(sys.argv[1]).glob("*-arbiter.jsonl"):
    by = {}
    for line in f.read_text().splitlines():
        e = json.loads(line); m = e["msg"]
        if "busy" in m:
            u = by.setdefault(e["user"], [0, 0, 0.0, 0.0])
            u[0] += 1; u[1] += "own" in m
            u[2] = max(u[2], m.get("own", 0.0)); u[3] = max(u[3], m["busy"])
    for user, (n, own, o, b) in sorted(by.items()):
        print(f"{f.name} user {user}: {n} reports, {own} with own; own {o:.3f} s of busy {b:.3f} s")
PY
rm -rf $O/tr; save
P=none,share+pacedstale,share+unpriced,share+priced
timeout 190 python3 benchmarks/fairness.py --policies $P --calibrate none \
  --scenarios sync-1:2:4,many-sync --long 8192 --seconds 10 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f1.json > $O/f1.txt 2>&1
echo "pass 1 rc $? $(date +%T)"; save
grep -E "^(sync-1:2:4|many-sync) " $O/f1.txt | cut -c1-110
timeout 220 python3 benchmarks/fairness.py --policies $P --calibrate none \
  --scenarios sync-long-vs-small,interactive+2048,mixed-1:2:4,dl-mix --long 8192 --seconds 6 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w.json > $O/w.txt 2>&1
echo "work pass rc $? $(date +%T)"; save
grep -E "^(sync-long-vs-small|interactive\+2048|mixed-1:2:4|dl-mix) " $O/w.txt | cut -c1-130
LEFT=$((560 - ($(date +%s) - T0)))
if [ $LEFT -gt 150 ]; then
  timeout $LEFT python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios sync-1:2:4,many-sync --long 8192 --seconds 10 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f2.json > $O/f2.txt 2>&1
  echo "pass 2 rc $? $(date +%T)"; save
  grep -E "^(sync-1:2:4|many-sync) " $O/f2.txt | cut -c1-110
else
  echo "pass 2 skipped: $LEFT s left"
fi
echo "lost or malformed: $(cat $O/f*.txt $O/w.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
