"""Where an interactive user's requests spend their time, from the client's side: before its
worker sees the request, in the worker, and after the worker's reply.

    GPUWB_PACING_TRACE=TR GPUWB_WORKER_PHASES=PH python benchmarks/fairness.py ... \
        --scenarios interactive+2048
    python benchmarks/request_path.py TR/<policy>-interactive+2048 PH [--user i] [--json out.json]

``fairness.py`` run with ``GPUWB_PACING_TRACE`` keeps each interactive user's requests
(``<user>-requests.json``: when each was issued, on the host's monotonic clock, and its
latency); ``GPUWB_WORKER_PHASES`` makes every session worker write each message's span
(``phases-PID.json``: its start and end, ``perf_counter``, the same clock on Linux, and how
many messages woke a sleeping poll). This joins the two (the user's worker is the one whose
messages fall inside its requests) and splits each request's latency into: the client's
Python and the message's way to the worker (issued → the worker's first message of it),
the worker (its first message's start → its last one's end: the ops, the wait for the
device, the reply sent), and the reply's way back with the client's waking to read it. Any
policy, ``none`` included (``fairness_why.py`` needs the arbiter's log). Percentiles per
part, a table, then JSON.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)

PARTS = ("latency", "client to worker", "worker", "reply to client")


def _pct(values: list, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def split_requests(issued: list, latencies: list, spans: list) -> dict[str, list]:
    """Each request's parts in seconds (PARTS), from its issue time and latency and the
    worker's message spans ``[start, end]`` sorted by start; a request none of whose
    messages is found is left out."""
    starts = [span[0] for span in spans]
    parts: dict[str, list] = {name: [] for name in PARTS}
    for t0, latency in zip(issued, latencies):
        first = bisect.bisect_left(starts, t0)
        last = bisect.bisect_right(starts, t0 + latency)
        if last <= first:
            continue
        parts["latency"].append(latency)
        parts["client to worker"].append(starts[first] - t0)
        parts["worker"].append(spans[last - 1][1] - starts[first])
        parts["reply to client"].append(t0 + latency - spans[last - 1][1])
    return parts


def the_users_worker(phases: dict[str, dict], issued: list, latencies: list) -> str:
    """The phases file whose messages make up most requests: a request's messages start
    after its issue and end before its reply is read (another user's worker, busy all
    along, has messages that straddle the requests' ends)."""
    def fits(name: str) -> int:
        spans = sorted(phases[name]["spans"])
        parts = split_requests(issued, latencies, spans)
        return sum(1 for back in parts["reply to client"] if back >= 0)
    return max(phases, key=fits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="TR/<policy>-<scenario> kept by fairness.py")
    parser.add_argument("phases", type=Path, help="the GPUWB_WORKER_PHASES folder of that run")
    parser.add_argument("--user", default="i")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    requests = json.loads((args.folder / f"{args.user}-requests.json").read_text())
    issued, latencies = requests["issued"], requests["latencies"]
    phases = {path: json.loads(Path(path).read_text())
              for path in glob.glob(str(args.phases / "phases-*.json"))}
    if not issued or not phases:
        print("no requests, or no phases files", file=sys.stderr)
        return 1
    worker = the_users_worker(phases, issued, latencies)
    spans = sorted(phases[worker]["spans"])
    parts = split_requests(issued, latencies, spans)
    print(f"{args.folder.name}: {len(parts['latency'])} of {len(issued)} requests joined to "
          f"{os.path.basename(worker)} ({phases[worker]['woke']} of {phases[worker]['messages']} "
          "messages woke a sleeping poll)")
    print(f"{'part':18} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    summary = {}
    for name in PARTS:
        values = parts[name]
        if not values:
            continue
        summary[name] = {q: _pct(values, p) * 1e3 for q, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
        print(f"{name:18} {summary[name]['p50']:8.3f} {summary[name]['p90']:8.3f} {summary[name]['p99']:8.3f}")
    emit({"folder": str(args.folder), "worker": os.path.basename(worker),
          "joined": len(parts["latency"]), "requests": len(issued), "ms": summary}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
