"""A held stretch's loop, taken apart: the client's cost per op and the wall per iteration,
local CuPy (eager, and the body as one CUDA graph) beside the pool's sides in one run.

    python benchmarks/held_loops.py [--devices auto] [--json out.json] [--quick]
        [--transports ipc,ipc-noearly,ipc-nofast,ipc-nographs] [--loops chain20,heat2d]
        [--iterations 300] [--rounds 3] [--warmup 40] [--all-held]

Issue 50 (the client's fast path for held stretches) is judged by these figures. Each
loop is a body of ops and a scalar read, as ``programs.py`` runs it:

* ``chain20``: 20 elementwise ops on 1 K float32 (x, y and Python floats, each result
  feeding the next, the last carried as the next x; ``program_bodies.chain20_body``), then
  ``float(x.sum())``;
* ``heat2d``: a 512 x 512 heat step by slice assignment (``program_bodies.heat2d_update``: 14
  calls, 5 of them slices), then ``float(linalg.norm(lap))``.

Every iteration is timed in two parts: ``t0``; the body's ops (nothing read); ``t1``; the
read (the sync); ``t2``. **Issue per op** is the median over the timed iterations of
``(t1 - t0) / ops`` (``ops``: the body's calls as a user counts them): the time the client
spends issuing the body, apart from the sync's wait; for local CuPy, its eager launch
cost (the device is idle at ``t0``: the last iteration ended with a read). **Per
iteration** is each round's wall (the whole loop of ``--iterations``) over its iterations,
the median of ``--rounds`` rounds; ``t2 - t0``'s median is kept too.

Sides: ``local`` (CuPy eager; NumPy where there is no GPU); ``local_graph`` (where CuPy and
a GPU exist: the body captured once with ``stream.begin_capture()``/``end_capture()``, a
loop-carried array copied back into its buffer inside the graph; each iteration
``graph.launch(stream)``, then the read, eager); and each proxy side of ``--transports``
(``benchmarks/served_pool.py``): ``ipc`` (stretch replay on), ``ipc-noearly`` (replays sent at the sync point, never early:
``GPUWB_EARLY_REPLAY=0``), ``ipc-nofast`` (the client's
fast path off, ``GPUWB_FAST_PATH=0``), ``ipc-nographs`` (replay off). Before the timed
rounds each side runs ``--warmup`` iterations, untimed: kernels built, the stretch offered,
held, captured and (replay measured, the default) kept or let go. ``replayed`` says how
many timed iterations were answered as replays of a held stretch (the client's count): a
figure of a side that did not hold its stretch is not a held stretch's (each round starts
from fresh uploads, so its first two iterations are not replays: 58 of 60 at most in a
quick round). ``--all-held`` opens the sessions with ``GPUWB_REPLAY_MEASURED=0`` (every
repeated stretch stays held: ``gpu_check.sh fastpath`` runs it so); without it a side
whose replays are not faster lets its stretch go, as a user's session would.
``--own-pools`` opens each side's session in a pool of its own (alone on the device, as one
user's session is: the worker runs a loop's next replay ahead only then,
gpu_backend/worker/run_ahead.py); a side ending in ``-noahead`` gets a pool that runs none
ahead (``GPUWB_RUN_AHEAD_US=0``): ``--own-pools --transports ipc,ipc-noahead`` is the A/B.

Targets (issue 50): issue per op in a held stretch <= 3 us and <= 0.25x local's; per
iteration <= 0.5x local eager. Every side's reads must be bitwise equal to local's.
Prints a table per loop, then one JSON object (also written to --json).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelproxy.modules import module_for  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from program_bodies import (CHAIN20_OPS, HEAT2D_OPS, chain20_body, chain20_inputs,  # noqa: E402
                            heat2d_grid, heat2d_update)
from programs import local_module  # noqa: E402
from served_pool import OWN_POOLS_HELP, _environment, sessions_for, use_side  # noqa: E402

#: issue 50's targets
ISSUE_US_PER_OP = 3.0
ISSUE_VS_LOCAL = 0.25
ITERATION_VS_LOCAL = 0.5


@dataclass(frozen=True)
class Loop:
    """A loop's body and read. *start* makes its state (a dict of arrays) from host data;
    *body* runs the body's ops on it (a loop-carried array reassigned in the dict) and
    returns what is read; *reduce* makes the 0-d array the read turns into a float."""
    what: str
    ops: int
    full: int
    quick: int
    start: Callable[[Any, int], dict]
    body: Callable[[Any, dict], Any]
    reduce: Callable[[Any, Any], Any]


def _chain20_start(xp, n):
    x, y = chain20_inputs(xp, n)
    return {"x": x, "y": y}


def _chain20_body(xp, state):
    state["x"] = chain20_body(state["x"], state["y"])
    return state["x"]


LOOPS = {
    "chain20": Loop("20 elementwise ops on {n} float32, float(x.sum())", CHAIN20_OPS, 1024, 1024,
                    _chain20_start, _chain20_body, lambda xp, x: x.sum()),
    "heat2d": Loop("a {n} x {n} heat step by slice assignment, float(linalg.norm(lap))", HEAT2D_OPS,
                   512, 64, lambda xp, n: {"u": heat2d_grid(xp, n)},
                   lambda xp, state: heat2d_update(state["u"]), lambda xp, lap: xp.linalg.norm(lap)),
}


# ------------------------------------------------------------------ sides

class Eager:
    """Local CuPy (or NumPy), or the proxy through one session: the body as ops."""

    def __init__(self, side: str, xp, session=None) -> None:
        self.side, self.xp, self.session = side, xp, session

    def module(self):
        use_side(self.side, self.session)   # (the proxy module works on the active session)
        return module_for(self.session) if self.session is not None else self.xp

    def prepare(self, loop: Loop, n: int) -> Callable[[], tuple[Callable, Callable]]:
        xp = self.module()
        state = loop.start(xp, n)
        self.wait()
        return (lambda: loop.body(xp, state)), (lambda out: float(loop.reduce(xp, out)))

    def wait(self) -> None:
        if self.session is not None:
            self.session.sync(device=True)
        elif self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()


class Graph:
    """Local CuPy with the body captured once as a CUDA graph over buffers of its own (a
    private memory pool, as ``graph_probe.py``); each iteration launches it, then reads,
    eagerly, on its stream."""

    side = "local_graph"
    session = None

    def __init__(self, cp) -> None:
        self.cp = cp
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.graphs: dict[str, tuple] = {}

    def capture(self, loop: Loop, n: int):
        cp = self.cp
        pool = cp.cuda.MemoryPool()
        with cp.cuda.using_allocator(pool.malloc), self.stream:
            buffers = {k: cp.array(v) for k, v in loop.start(cp, n).items()}
            loop.body(cp, dict(buffers))   # warm-up: kernels built, the pool holds the blocks
            self.stream.synchronize()
            state = dict(buffers)
            self.stream.begin_capture()
            try:
                out = loop.body(cp, state)
                for k, buf in buffers.items():   # a loop-carried array back into its buffer
                    if state[k] is not buf:
                        cp.copyto(buf, state[k])
            finally:
                graph = self.stream.end_capture()
        return graph, buffers, out, pool

    def prepare(self, loop: Loop, n: int):
        cp = self.cp
        if loop not in self.graphs:
            self.graphs[loop] = self.capture(loop, n)
        graph, buffers, out, _pool = self.graphs[loop]
        with self.stream:
            for k, fresh in loop.start(cp, n).items():
                buffers[k][...] = fresh
        self.stream.synchronize()
        stream = self.stream

        def read(o):
            with stream:
                return float(loop.reduce(cp, o))
        return (lambda: graph.launch(stream) or out), read

    def wait(self) -> None:
        self.stream.synchronize()


# ------------------------------------------------------------------ measuring

def one_round(side, loop: Loop, n: int, iterations: int) -> dict:
    """*iterations* of the loop on *side*, each timed as issue (the body) and read."""
    body, read = side.prepare(loop, n)
    session = side.session
    issue, whole, values = [], [], []
    counted = None
    clock = time.perf_counter
    seq = None
    began = clock()
    for i in range(iterations):
        if i == 1 and session is not None:   # (the client's own count of the ops it queued)
            seq = getattr(session, "_seq", None)
        t0 = clock()
        out = body()
        t1 = clock()
        if i == 1 and seq is not None:
            seq = (seq, session._seq)
        values.append(read(out))
        t2 = clock()
        issue.append(t1 - t0)
        whole.append(t2 - t0)
        if i == 1 and seq is not None:
            counted = [seq[1] - seq[0], session._seq - seq[1]]   # [body, read]
    wall = clock() - began
    return {"issue": issue, "whole": whole, "values": values, "wall": wall, "counted": counted}


def _replays(session) -> int:
    stretches = getattr(session, "stretches", None) if session is not None else None
    return stretches.replays if stretches is not None else 0


def measure(sides: list, loop: Loop, n: int, iterations: int, rounds: int, warmup: int) -> dict:
    """Warm-up, then *rounds* rounds on every side in alternating order (A B C, C B A, ...)."""
    runs = {side.side: [] for side in sides}
    worker = {side.side: 0.0 for side in sides}
    replays = {side.side: 0 for side in sides}
    errors = {}
    live = []
    for side in sides:
        try:
            one_round(side, loop, n, warmup)
            live.append(side)
        except Exception as exc:   # (a body that will not capture, say: that side sits out)
            errors[side.side] = f"{type(exc).__name__}: {exc}"
    for r in range(rounds):
        for side in (live if r % 2 == 0 else list(reversed(live))):
            session = side.session
            busy, replayed = (session.worker_seconds if session is not None else 0.0), _replays(session)
            runs[side.side].append(one_round(side, loop, n, iterations))
            if session is not None:
                worker[side.side] += session.worker_seconds - busy
                replays[side.side] += _replays(session) - replayed
    out = {}
    reference = runs[sides[0].side][-1]["values"] if sides[0] in live else None
    for side in sides:
        name = side.side
        if name in errors:
            out[name] = {"error": errors[name]}
            continue
        done = runs[name]
        issue = [t for run in done for t in run["issue"]]
        whole = [t for run in done for t in run["whole"]]
        timed = len(issue)
        row = {"issue_us_per_op": statistics.median(issue) / loop.ops * 1e6,
               "issue_us_per_iteration": statistics.median(issue) * 1e6,
               "issue_p90_us_per_op": sorted(issue)[int(timed * 0.9)] / loop.ops * 1e6,
               "iteration_us": statistics.median(run["wall"] / iterations for run in done) * 1e6,
               "iteration_rounds_us": [run["wall"] / iterations * 1e6 for run in done],
               "iteration_median_us": statistics.median(whole) * 1e6,
               "bitwise_local": reference is not None and all(run["values"] == reference for run in done),
               "last_read": done[-1]["values"][-1]}
        if side.session is not None:
            row["worker_us_per_iteration"] = worker[name] / timed * 1e6
            row["replayed"] = replays[name] / timed
            # the client's own count of the ops it queued an iteration: [body, read]
            row["client_ops"] = done[-1]["counted"]
        out[name] = row
    return out


def verdicts(rows: dict, proxies: list[str]) -> dict:
    """Issue 50's targets, side by side, against local eager's figures of the same run."""
    local = rows.get("local", {})
    out = {}
    for side in proxies:
        row = rows.get(side)
        if not row or "error" in row or "error" in local:
            continue
        per_op_vs = row["issue_us_per_op"] / local["issue_us_per_op"]
        iteration_vs = row["iteration_us"] / local["iteration_us"]
        row["issue_vs_local"] = per_op_vs
        row["iteration_vs_local"] = iteration_vs
        row["issue_met"] = row["issue_us_per_op"] <= ISSUE_US_PER_OP and per_op_vs <= ISSUE_VS_LOCAL
        row["iteration_met"] = iteration_vs <= ITERATION_VS_LOCAL
        out[side] = {"issue_per_op": row["issue_met"], "iteration": row["iteration_met"]}
    graph = rows.get("local_graph")
    if graph and "error" not in graph and "error" not in local:
        graph["issue_vs_local"] = graph["issue_us_per_op"] / local["issue_us_per_op"]
        graph["iteration_vs_local"] = graph["iteration_us"] / local["iteration_us"]
    return out


def table(name: str, loop: Loop, n: int, rows: dict, iterations: int, rounds: int, kind: str,
          all_held: bool) -> str:
    head = (f"{'side':18} {'issue us/op':>11} {'x local':>7} {'issue us/it':>11} {'us/iteration':>12} "
            f"{'x local':>7} {'median t2-t0':>12} {'worker us/it':>12} {'replayed':>8} {'bitwise':>7} "
            f"{'op target':>9} {'it target':>9}")
    lines = [f"{name}: {loop.what.format(n=n)}; {loop.ops} ops a body, {iterations} iterations x {rounds} "
             f"rounds (local: {kind}; stretches {'all held' if all_held else 'kept or let go by their timing'})",
             head, "-" * len(head)]

    def cell(row, key, width, form="{:.2f}"):
        value = row.get(key)
        return f"{'-' if value is None else form.format(value):>{width}}"

    for side, row in rows.items():
        if "error" in row:
            lines.append(f"{side:18} not measured: {row['error'][:120]}")
            continue
        met = lambda key: "-" if key not in row else ("yes" if row[key] else "no")  # noqa: E731
        lines.append(f"{side:18} {row['issue_us_per_op']:11.2f} {cell(row, 'issue_vs_local', 7)} "
                     f"{row['issue_us_per_iteration']:11.1f} {row['iteration_us']:12.1f} "
                     f"{cell(row, 'iteration_vs_local', 7)} {row['iteration_median_us']:12.1f} "
                     f"{cell(row, 'worker_us_per_iteration', 12, '{:.1f}')} "
                     f"{cell(row, 'replayed', 8, '{:.0%}')} {'yes' if row['bitwise_local'] else 'NO':>7} "
                     f"{met('issue_met'):>9} {met('iteration_met'):>9}")
    lines.append(f"targets: issue per op in a held stretch <= {ISSUE_US_PER_OP:g} us and <= {ISSUE_VS_LOCAL:g}x "
                 f"local's (op target); per iteration <= {ITERATION_VS_LOCAL:g}x local eager (it target)")
    for side, row in rows.items():
        if row.get("replayed") is not None and not side.endswith("-nographs") and row["replayed"] < 0.9:
            lines.append(f"note: {side}: {row['replayed']:.0%} of its timed iterations were replays: its "
                         "figures are not (only) a held stretch's")
    counted = {s: r["client_ops"] for s, r in rows.items() if r.get("client_ops")}
    if counted:
        lines.append("the client's own count of ops an iteration (body + read): "
                     + ", ".join(f"{s} {c[0]} + {c[1]}" for s, c in counted.items()))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true",
                        help="60 iterations x 2 rounds, 20 warm-up, small sizes: a smoke run")
    parser.add_argument("--transports", default="ipc,ipc-noearly,ipc-nofast,ipc-nographs",
                        help="proxy sides (benchmarks/served_pool.py)")
    parser.add_argument("--loops", default=",".join(LOOPS), help="of " + ",".join(LOOPS))
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=40,
                        help="untimed iterations per side and loop first (the stretch held by then)")
    parser.add_argument("--no-graph", action="store_true", help="no local CUDA graph side")
    parser.add_argument("--all-held", action="store_true",
                        help="sessions opened with GPUWB_REPLAY_MEASURED=0: every repeated stretch held")
    parser.add_argument("--policy", default="fair")
    parser.add_argument("--own-pools", action="store_true", help=OWN_POOLS_HELP)
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.rounds, args.warmup = min(args.iterations, 60), min(args.rounds, 2), 20
    names = [name for name in args.loops.split(",") if name]
    unknown = sorted(set(names) - set(LOOPS))
    if unknown:
        parser.error(f"unknown loops: {', '.join(unknown)}")

    local, kind = local_module()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "python": sys.version.split()[0], "local_kind": kind, "quick": args.quick,
           "iterations": args.iterations, "rounds": args.rounds, "warmup": args.warmup,
           "all_held": args.all_held,
           "targets": {"issue_us_per_op": ISSUE_US_PER_OP, "issue_vs_local": ISSUE_VS_LOCAL,
                       "iteration_vs_local": ITERATION_VS_LOCAL}}
    if kind == "cupy":
        props = local.cuda.runtime.getDeviceProperties(0)
        out["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        out["cupy"] = local.__version__
    held = {"GPUWB_REPLAY_MEASURED": "0"} if args.all_held else {}
    loops, tables = {}, []
    with _environment(held), sessions_for(args.policy, args.devices, args.transports,
                                          own_pools=args.own_pools) as sessions:
        out["pool_device"] = next(iter(sessions.values())).device
        sides = [Eager("local", local)]
        if kind == "cupy" and not args.no_graph:
            sides.append(Graph(local))
        proxies = [f"proxy_{t}" for t in sessions]
        sides += [Eager(f"proxy_{t}", None, s) for t, s in sessions.items()]
        for name in names:
            loop = LOOPS[name]
            n = loop.quick if args.quick else loop.full
            rows = measure(sides, loop, n, args.iterations, args.rounds, args.warmup)
            met = verdicts(rows, proxies)
            loops[name] = {"what": loop.what.format(n=n), "ops": loop.ops, "size": n, "sides": rows, "met": met}
            tables.append(table(name, loop, n, rows, args.iterations, args.rounds, kind, args.all_held))
        out["stretches"] = {t: s.memory_info().get("stretches") for t, s in sessions.items()}
        out["client_stretches"] = {t: s.stretches.figures() if s.stretches is not None else None
                                   for t, s in sessions.items()}
        # what each session's settings say of the client's fast path (None: no such setting yet)
        out["fast_path"] = {t: getattr(s.settings, "fast_path", None) for t, s in sessions.items()}
    if kind != "cupy":
        out["local_graph"] = "skipped: needs CuPy and a GPU"
    out["loops"] = loops
    print("\n\n".join(tables))
    emit(out, args.json)
    bitwise = all(row.get("bitwise_local", True) for entry in loops.values() for row in entry["sides"].values())
    return 0 if bitwise else 1


if __name__ == "__main__":
    sys.exit(main())
