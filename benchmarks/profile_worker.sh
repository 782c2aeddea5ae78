#!/usr/bin/env bash
# Profile a session worker under one case of overhead.py; prints the top functions, or with
# PHASES=1 the median time of each phase of a message in the live worker (no profiler).
#   CASE=latency|pipelined POLICY=none|fair|fifo REPS=3000 [PHASES=1] bash benchmarks/profile_worker.sh [overhead.py args]
set -u
OUT=${OUT:-gpu-out}; CASE=${CASE:-latency}; POLICY=${POLICY:-fair}
DIR="$OUT/prof-$CASE-$POLICY"
mkdir -p "$DIR"
if [ -n "${PHASES:-}" ]; then
  export GPUWB_WORKER_PHASES=$DIR
else
  export GPUWB_WORKER_PROFILE=$DIR
fi
python3 benchmarks/overhead.py --only "$CASE" --policy "$POLICY" --latency-reps ${REPS:-3000} \
    --pipelined-ops ${OPS:-20000} "$@" | grep -E '"(median_us|worker_us|ops_per_s)"'
sleep 1   # the workers write their files as their sessions end
python3 - "$DIR" <<'PY'
import glob, json, pstats, sys
for path in glob.glob(sys.argv[1] + "/phases-*.json"):
    summary = json.load(open(path))
    if summary["messages"] > 100:
        print(path, json.dumps(summary))
for path in glob.glob(sys.argv[1] + "/worker-*.prof"):
    stats = pstats.Stats(path)
    if stats.total_calls > 1000:
        stats.sort_stats("tottime").print_stats(22)
PY
