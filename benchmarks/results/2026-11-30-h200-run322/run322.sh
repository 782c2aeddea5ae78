#!/bin/bash
# fifty-fifth session, run 322 (issue 51), run 321 again with replays priced by their own
# segments whatever is pending before them (run 321 priced 5-14 % of the device time): a held stretch's replay beside others charged
# its own cost (worker/replay_prices.py, GPUWB_SHARE_PRICED) against its scaled span (the
# default) and `none`, in one run: (1) the two scenarios whose one-second share error is
# missed (sync-1:2:4, many-sync), two passes of 10 s; (2) the scenarios whose work or
# rates are near their limits (sync-long-vs-small, interactive+2048, mixed-1:2:4, dl-mix),
# one pass of 8 s; (3) a traced pass of share+priced, to show the replays were priced
# (the arbiter's trace: reports with ``own``, by user).
#   run(command="bash .gpu/run322.sh", carry=[".whl", ".gpu"])
set -u
(cd .gpu && tar xzf new.tgz) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o322; mkdir -p $O
save() { tar czf $OUT/o322.tgz -C /tmp o322; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
P=none,share+unpriced,share+priced
mkdir -p $O/tr
GPUWB_PACING_TRACE=$O/tr timeout 60 python3 benchmarks/fairness.py --policies share+priced --calibrate none \
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
for i in 1; do
  timeout 200 python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios sync-1:2:4,many-sync --long 8192 --seconds 10 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f$i.json > $O/f$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(sync-1:2:4|many-sync) " $O/f$i.txt | cut -c1-110
done
timeout 240 python3 benchmarks/fairness.py --policies $P --calibrate none \
  --scenarios sync-long-vs-small,interactive+2048,mixed-1:2:4,dl-mix --long 8192 --seconds 8 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/w.json > $O/w.txt 2>&1
echo "work pass rc $? $(date +%T)"; save
grep -E "^(sync-long-vs-small|interactive\+2048|mixed-1:2:4|dl-mix) " $O/w.txt | cut -c1-130
for i in 2; do
  timeout 200 python3 benchmarks/fairness.py --policies $P --calibrate none \
    --scenarios sync-1:2:4,many-sync --long 8192 --seconds 10 --calibrate-seconds 2 --lead 2 --devices 0 --json $O/f$i.json > $O/f$i.txt 2>&1
  echo "pass $i rc $? $(date +%T)"; save
  grep -E "^(sync-1:2:4|many-sync) " $O/f$i.txt | cut -c1-110
done
echo "lost or malformed: $(cat $O/f*.txt $O/w.txt | grep -cE 'SessionLost|malformed requests|ended this session')"
echo "end $(date +%T)"
