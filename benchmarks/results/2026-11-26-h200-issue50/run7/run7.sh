#!/bin/bash
# issue 50, run 7: where a replayed stretch's worker time goes (phases and cProfile), HEAD export
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
cd .gpu/clean
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
gcc -O2 -fPIC -shared -fno-strict-aliasing -I$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])") kernelproxy/_held_ops.c -o kernelproxy/_held_ops.cpython-312-x86_64-linux-gnu.so && echo "built there" | tee -a $OUT/gpu.txt
timeout 200 python3 benchmarks/worker_phases.py --reps 1000 --json $OUT/phases7.json 2>&1 | grep -v '^ \|^{\|^}' | tee $OUT/phases7.log
for L in hot_sync chain20; do
  mkdir -p $OUT/prof-$L
  GPUWB_WORKER_PROFILE=$OUT/prof-$L timeout 100 python3 benchmarks/worker_phases.py --reps 3000 --sides fast --loops $L 2>&1 | grep -v '^ \|^{\|^}' | tail -2
done
sleep 2
python3 - $OUT <<'PY' | tee $OUT/prof7.txt
import glob, pstats, sys
for loop in ("hot_sync", "chain20"):
    for path in glob.glob(f"{sys.argv[1]}/prof-{loop}/worker-*.prof"):
        stats = pstats.Stats(path)
        if stats.total_calls < 10000:
            continue
        print("=====", loop, path, stats.total_calls)
        stats.sort_stats("tottime").print_stats(40)
        stats.sort_stats("cumulative").print_stats(70)
PY
