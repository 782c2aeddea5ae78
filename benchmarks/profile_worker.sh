#!/usr/bin/env bash
# Profile a session worker under the small-op latency loop; prints the top functions.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/prof"
export GPUWB_WORKER_PROFILE=$OUT/prof
python3 benchmarks/overhead.py --only latency --latency-reps ${REPS:-3000} "$@" | grep -E '"(median_us|worker_us)"'
python3 - "$OUT/prof" <<'PY'
import glob, pstats, sys
for path in glob.glob(sys.argv[1] + "/worker-*.prof"):
    stats = pstats.Stats(path)
    if stats.total_calls > 1000:
        stats.sort_stats("tottime").print_stats(22)
PY
