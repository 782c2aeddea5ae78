#!/usr/bin/env bash
# Profile a session worker under one case of overhead.py; prints the top functions.
#   CASE=latency|pipelined POLICY=none|fair|fifo REPS=3000 bash benchmarks/profile_worker.sh
set -u
OUT=${OUT:-gpu-out}; CASE=${CASE:-latency}; POLICY=${POLICY:-fair}
mkdir -p "$OUT/prof-$CASE-$POLICY"
export GPUWB_WORKER_PROFILE=$OUT/prof-$CASE-$POLICY
python3 benchmarks/overhead.py --only "$CASE" --policy "$POLICY" --latency-reps ${REPS:-3000} \
    --pipelined-ops ${OPS:-20000} "$@" | grep -E '"(median_us|worker_us|ops_per_s)"'
python3 - "$GPUWB_WORKER_PROFILE" <<'PY'
import glob, pstats, sys
for path in glob.glob(sys.argv[1] + "/worker-*.prof"):
    stats = pstats.Stats(path)
    if stats.total_calls > 1000:
        stats.sort_stats("tottime").print_stats(22)
PY
