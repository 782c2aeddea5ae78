"""Where a program's worker spends each message, phase by phase, beside local CuPy.

    python benchmarks/program_phases.py [--programs mc_option,random_walk] [--rounds 3]
                                       [--devices auto] [--quick] [--json out.json]

``step_profile.py --timeline`` says whether the worker sets a program's pace (busy while its
client waits); this says on what. Each program runs in a pool of its own (one worker, one
session: a worker's phases are its whole life's), the worker timing every message's phases
(``GPUWB_WORKER_PHASES``, gpu_backend/worker/phases.py): received, opened, run, the reply
sent, and the steady lane's answer, its pushed reply and its next replay run ahead, that
one in its parts (``lane_*``: its guards checked, its inputs gathered, each graph launched
and each eager op run, the results handed out, the reads made). Local CuPy runs the same
program in alternating rounds, its wall time a message's reference. Only the messages of
the timed rounds count (the warm-up's captures left out). Without the profiler's cost: each
phase is two ``perf_counter`` reads.

The table: each program's wall time a run (local, proxy), the worker's messages a run, and
its phases by their share of a message (all messages counted, µs), the largest first; how
many messages took each path (their replies pushed ahead and confirmed, taken by the steady
lane, served by the generic path) and the last run's messages by path, in order; then JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)
from programs import PROGRAMS, _xp, finish, local_module  # noqa: E402
from served_pool import open_pool, sessions_by_transport  # noqa: E402

from gpu_backend.worker.phases import read_summaries  # noqa: E402

DEFAULT = "mc_option,monte_carlo_pi,random_walk,langevin_annealed,chain20"


def run_program(name: str, quick: bool, rounds: int, devices: str, local) -> dict:
    """One program: its local and proxy wall times a run (alternating), its worker's phases."""
    fn, full, small, _tol = PROGRAMS[name]
    size = small if quick else full
    where = tempfile.mkdtemp(prefix=f"gpuwb-phases-{name}-")
    os.environ["GPUWB_WORKER_PHASES"] = where   # (read by the worker as it starts)
    try:
        walls = {"local": [], "proxy": []}
        timed = []   # (the proxy's timed rounds, on the host's monotonic clock)
        with open_pool("fair", devices, False) as pool:
            with sessions_by_transport(pool, "ipc") as sessions:
                figures = _rounds(fn, size, rounds, local, sessions["ipc"], walls, timed)
            # (the worker writes its phases as its session ends, before the pool stops it)
            summaries = read_summaries(where, 1, patience=20.0)
    finally:
        os.environ.pop("GPUWB_WORKER_PHASES", None)
    summary = summaries[0] if summaries else {}
    rows = [phases for start, phases in summary.get("rows", [])
            if any(lo <= start <= hi for lo, hi in timed)]
    last = [phases for start, phases in summary.get("rows", [])
            if timed and timed[-1][0] <= start <= timed[-1][1]]
    return {"local_ms": statistics.median(walls["local"]) * 1e3,
            "proxy_ms": statistics.median(walls["proxy"]) * 1e3,
            "messages_a_run": len(rows) / rounds,
            **shares(rows), "woke": summary.get("woke", 0), "spun": summary.get("spun", 0),
            "paths": paths(rows), "last_run": "".join(path_letter(p) for p in last),
            "stretches": figures}


def path_letter(phases: list) -> str:
    """How a message was served, by the phases it went through: its reply pushed before it
    came and confirmed (P), taken by the steady lane and answered (L), served by the generic
    path (G); lower case where the message ran no next replay ahead in the steady lane (no
    ``lane_*`` launch in it)."""
    names = {name for name, _us in phases}
    letter = "P" if "confirmed" in names else "G" if "opened" in names else "L"
    ran = "lane_graph" in names or "lane_eager" in names
    return letter if ran else letter.lower()


def paths(rows: list) -> dict:
    """How many messages took each path (:func:`path_letter`)."""
    counts: dict[str, int] = {}
    for phases in rows:
        letter = path_letter(phases)
        counts[letter] = counts.get(letter, 0) + 1
    return dict(sorted(counts.items()))


def _rounds(fn, size, rounds: int, local, session, walls: dict, timed: list) -> dict:
    """A warm-up, then *rounds* rounds of the program, local and proxy alternating: their
    wall times into *walls*, the proxy's windows into *timed*; the session's stretch figures."""
    sides = [("local", local, None), ("proxy", None, session)]
    for side, xp, s in sides:   # warm-up: kernels compiled, stretches held
        fn(_xp(side, xp, s), size)
        finish(xp, s)
    for turn in range(rounds):
        for side, xp, s in (sides if turn % 2 == 0 else sides[::-1]):
            module = _xp(side, xp, s)
            start = time.perf_counter()
            fn(module, size)
            finish(xp, s)
            walls[side].append(time.perf_counter() - start)
            if s is not None:
                timed.append((start, time.perf_counter()))
    figures = dict(session.memory_info().get("stretches") or {})
    stretches = getattr(session, "stretches", None)   # (the client's: its early replays)
    if stretches is not None:
        figures["client"] = stretches.figures()
    return figures


def shares(rows: list) -> dict:
    """Each phase's share of a message (µs, all *rows* counted: a phase met in some messages
    only, or several times in one, weighs so), its median where met, and how many messages
    met it."""
    spans: dict[str, list[float]] = {}
    met: dict[str, int] = {}
    for phases in rows:
        for name in {name for name, _us in phases}:
            met[name] = met.get(name, 0) + 1
        for name, us in phases:
            spans.setdefault(name, []).append(us)
    count = max(len(rows), 1)
    return {"per_message_us": {name: sum(v) / count for name, v in spans.items()},
            "median_us": {name: statistics.median(v) for name, v in spans.items()},
            "messages_met": met}


def table(rows: dict, top: int) -> str:
    lines = [f"{'program':22s} {'local ms':>9s} {'proxy ms':>9s} {'msgs/run':>9s} {'µs/msg':>8s}  "
             f"phases (µs a message, largest first)"]
    for name, row in rows.items():
        phases = sorted(row["per_message_us"].items(), key=lambda kv: -kv[1])
        total = sum(v for _k, v in phases)
        parts = ", ".join(f"{k} {v:.1f}" for k, v in phases[:top])
        lines.append(f"{name:22s} {row['local_ms']:9.2f} {row['proxy_ms']:9.2f} "
                     f"{row['messages_a_run']:9.1f} {total:8.1f}  {parts}")
        lines.append(f"{'':22s} paths {row['paths']} (P pushed and confirmed, L the lane's, G "
                     f"generic; lower case: no run ahead in the lane); the last run: {row['last_run']}")
        figures = row["stretches"]
        lines.append(f"{'':22s} the lane's runs ahead declined {figures.get('lane_declined')} (measured by itself {figures.get('lane_measured')}), "
                     f"its plans left {figures.get('lane_left_why')}; "
                     + ", ".join(f"{k} {figures.get(k)}" for k in
                                 ("lane", "lane_armed", "lane_left", "pushed", "push_confirmed",
                                  "push_taken", "push_quiet", "push_rolled", "reads_deferred",
                                  "ahead", "ahead_read", "draws_redone"))
                     + f"; the client's {figures.get('client')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--quick", action="store_true", help="programs.py's small sizes")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    local, local_kind = local_module()
    rows = {name: run_program(name, args.quick, args.rounds, args.devices, local)
            for name in args.programs.split(",") if name}
    print(table(rows, args.top))
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
          "local_kind": local_kind, "rounds": args.rounds, "programs": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
