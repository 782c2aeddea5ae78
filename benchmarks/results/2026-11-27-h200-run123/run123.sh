#!/bin/bash
# twenty-sixth session, run 123 (random draws run ahead): where the drawing programs' time goes,
# draws ahead on and off (step_profile --timeline, GPUWB_DRAWS_AHEAD=0 for the second), the
# worker's cProfile of monte_carlo_pi with draws ahead, and a second A/B pass of programs.py
# with the sides in the other order.
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   run(command="bash .gpu/run123.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o123/prof
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
for v in 1 0; do
  GPUWB_DRAWS_AHEAD=$v timeout 120 python3 benchmarks/step_profile.py --programs monte_carlo_pi,random_walk,mc_option --rounds 3 \
    --devices 0 --transports ipc --timeline --json /tmp/o123/sp$v.json > /tmp/o123/sp$v.txt 2>&1
  echo "step_profile draws_ahead=$v rc $?"; grep -B2 -A6 "program / side" /tmp/o123/sp$v.txt | head -24
done
GPUWB_WORKER_PROFILE=/tmp/o123/prof timeout 100 python3 benchmarks/programs.py --rounds 3 --transports ipc --devices 0 --policy share \
  --programs monte_carlo_pi --json /tmp/o123/pp.json > /tmp/o123/pp.txt 2>&1
echo "profiled rc $?"; grep -E "^monte_carlo_pi" /tmp/o123/pp.txt
sleep 2
python3 - <<'PY' > /tmp/o123/prof.txt 2>&1
import glob, pstats
for f in sorted(glob.glob('/tmp/o123/prof/*.prof')):
    s = pstats.Stats(f)
    if s.total_tt < 0.05:
        continue
    print('=====', f, s.total_tt)
    s.sort_stats('tottime').print_stats(30)
    s.sort_stats('cumtime').print_stats(45)
PY
head -90 /tmp/o123/prof.txt | cut -c1-170
timeout 150 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc-nodraws,ipc --devices 0 --policy share \
  --programs random_walk,monte_carlo_pi,mc_option --json /tmp/o123/p.json > /tmp/o123/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|bitwise equal" /tmp/o123/p.txt | head -8
tar czf $OUT/o123.tgz -C /tmp o123
echo "end $(date +%T)"
