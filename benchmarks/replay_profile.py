"""Where a replayed loop's time goes: cProfiles of the client and of its worker.

    python benchmarks/replay_profile.py [--devices auto] [--reps 2000] [--loop stencil] [--top 25]
    python benchmarks/replay_profile.py --loop kmeans --reps 5     # a whole program of programs.py
    python benchmarks/replay_profile.py --loop train --reps 300 --policy none   # fairness.py's trainer
    python benchmarks/replay_profile.py --loop logistic_regression --reps 5 --callers sendmsg

Runs one loop of ``replay_sync.py`` (or one program of ``programs.py``, whole, each
repetition, or ``fairness.py``'s training step; stretch replay on, the same-host link) under cProfile in this process, with
the session's worker profiled too (``GPUWB_WORKER_PROFILE``), and prints both profiles'
top functions by own time, and the worker's by cumulative time. A
diagnostic beside ``replay_sync.py``'s figures (the profiler slows every Python call):
which calls a replayed iteration makes, and which of them cost.
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelproxy.modules import module_for  # noqa: E402
from programs import PROGRAMS  # noqa: E402
from replay_sync import LOOPS  # noqa: E402
from served_pool import open_pool, sessions_by_transport, use_side  # noqa: E402
from fairness_clients import training_step  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--loop", choices=sorted(LOOPS) + sorted(PROGRAMS) + ["train"], default="stencil")
    parser.add_argument("--policy", default="fair", help="the pool's policy (a lone session's cost of it)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--side", default="ipc", help="ipc (replay on) or ipc-nographs")
    parser.add_argument("--quick", action="store_true", help="a program at programs.py's small size")
    parser.add_argument("--callers", action="append", default=[], metavar="NAME",
                        help="also print who called functions matching NAME (a regular "
                             "expression, pstats' print_callers), in both profiles")
    args = parser.parse_args(argv)
    where = tempfile.mkdtemp(prefix="replay-profile-")
    os.environ["GPUWB_WORKER_PROFILE"] = where   # (read by each worker as it starts)
    with open_pool(args.policy, args.devices, False) as pool, \
            sessions_by_transport(pool, args.side) as sessions:
        session = sessions[args.side]
        use_side(args.side, session)
        step = _step(args.loop, module_for(session), args.quick)
        for i in range(50 if args.loop in LOOPS else 2):
            step(i)
        t0 = time.perf_counter()
        for i in range(args.reps):
            step(i)
        plain = (time.perf_counter() - t0) / args.reps * 1e6
        profile = cProfile.Profile()
        worker0 = session.worker_seconds
        profile.enable()
        for i in range(args.reps):
            step(i)
        profile.disable()
        worker = (session.worker_seconds - worker0) / args.reps * 1e6
        print(f"{args.loop} on {args.side} under {args.policy}: {plain:.1f} us an iteration unprofiled; worker "
              f"{worker:.1f} us profiled; stretches {session.memory_info().get('stretches')}")
        print("\n=== client ===")
        client = pstats.Stats(profile)
        client.sort_stats("tottime").print_stats(args.top)
        for name in args.callers:
            client.print_callers(name)
    time.sleep(1.0)   # the workers write their profiles as their sessions end
    for path in glob.glob(os.path.join(where, "worker-*.prof")):
        stats = pstats.Stats(path)
        if stats.total_calls > 10 * args.reps:
            print(f"\n=== worker {os.path.basename(path)} ===")
            print(calls_per_message(stats))
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
            for name in args.callers:
                stats.print_callers(name)
    return 0


def calls_per_message(stats: pstats.Stats) -> str:
    """The worker's calls (Python functions and C builtins, as cProfile counts them) per
    message it served, and of those the ones under its run ahead (``RunAhead.start``) and
    its reply (``Server._send_reply``), a callee's own callees apportioned to each caller by
    its share of the callee's calls: a count that does not swing with the host's load, for
    judging a leaner path by what it no longer calls."""
    entries = stats.stats
    stats.calc_callees()
    callees = stats.all_callees

    def find(file_end: str, name: str):
        return next((k for k in entries if k[0].endswith(file_end) and k[2] == name), None)

    memo: dict = {}

    def under(key, seen=frozenset()) -> float:
        if key in memo:
            return memo[key]
        total = 0.0
        for callee, edge in callees.get(key, {}).items():
            if callee in seen:   # (recursion: counted once)
                continue
            calls = edge[1] if isinstance(edge, tuple) else edge
            own = entries[callee][1] or 1
            total += calls + calls / own * under(callee, seen | {key})
        memo[key] = total
        return total

    served = find("worker/server.py", "_serve_message")
    if served is None:
        return "worker: no message served in its profile"
    messages = entries[served][1]
    parts = [f"worker: {messages} messages, {stats.total_calls / messages:.0f} calls a message"]
    for label, file_end, name in (("its run ahead", "worker/run_ahead.py", "start"),
                                  ("its reply", "worker/server.py", "_send_reply")):
        key = find(file_end, name)
        if key is not None:
            parts.append(f"{label} {(entries[key][1] + under(key)) / messages:.0f}")
    return "; ".join(parts) + " (the whole session: its start-up and warm-up included)"


def _step(name: str, xp, quick: bool = False):
    """One iteration of a replay_sync loop, one whole run of a program (at its small size:
    *quick*), or a training step."""
    if name == "train":
        import numpy as np
        step = training_step(xp, np, 4096)
        return lambda i: step()
    if name in LOOPS:
        return LOOPS[name](xp)
    fn, size = PROGRAMS[name][0], PROGRAMS[name][2 if quick else 1]
    return lambda i: fn(xp, size)


if __name__ == "__main__":
    sys.exit(main())
