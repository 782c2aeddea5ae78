#!/bin/bash
# twenty-fifth session, run 116: where fused_loop's worker time goes (a cProfile of each worker,
# GPUWB_WORKER_PROFILE), and CuPy's own fusion tests through the proxy given the time they
# need (run 115's proxy side stopped at its limit).
# Before: a clean export of HEAD into .gpu/clean (docs and benchmarks/results left out), REV;
#   CuPy 14.2.0's suite in .gpu/suite/cupy-14.2.0;
#   run(command="bash .gpu/run116.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/o116/prof
export GPUWB_CUPY_SUITE_CACHE=$PWD/.gpu/suite
cd .gpu/clean; export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_WORKER_PROFILE=/tmp/o116/prof timeout 120 python3 benchmarks/programs.py --rounds 3 --transports ipc --devices 0 --policy share \
  --programs fused_loop --json /tmp/o116/p.json > /tmp/o116/p.txt 2>&1
echo "programs rc $?"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x|stretches" /tmp/o116/p.txt | head -4
sleep 2; ls /tmp/o116/prof
python3 - <<'PY' > /tmp/o116/prof.txt 2>&1
import glob, pstats
for f in sorted(glob.glob('/tmp/o116/prof/*.prof')):
    s = pstats.Stats(f)
    if s.total_tt < 0.05:
        continue
    print('=====', f, s.total_tt)
    s.sort_stats('tottime').print_stats(25)
    s.sort_stats('cumtime').print_stats(40)
PY
head -120 /tmp/o116/prof.txt | cut -c1-160
timeout 420 python3 benchmarks/cupy_suite/run.py --sides local,proxy --folders core --devices 0 --jobs 15 --subsample --timeout 100,300 \
  --keep /tmp/o116/suite --json /tmp/o116/suite.json -- -k fusion_tests > /tmp/o116/s.txt 2>&1
echo "suite rc $?"; tail -16 /tmp/o116/s.txt
tar czf $OUT/o116.tgz -C /tmp o116
echo "end $(date +%T)"
