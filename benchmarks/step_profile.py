"""Where a whole program's time goes through the proxy: the client's issuing, its waits, and
the worker's busy time, beside the same program run by local CuPy.

    python benchmarks/step_profile.py [--programs mlp_training,kmeans] [--rounds 3]
                                      [--devices auto] [--transports ipc] [--json out.json]

programs.py says *how much* slower a program is through the proxy; this says *where*. It runs
programs.py's programs (same code, same sizes) in alternating rounds, and on the proxy side
times the session's entry points from outside, the outermost call counting:
``Session.submit`` (issuing an op, with any early send), ``Session.upload``, and the waits
(``Session.sync``, ``Session.result``, with the flush they start). The rest of the wall time
is the program's own Python, the proxy's array wrapper around ``submit`` and host NumPy.
From the replies, the worker's time on the session's batches (reply field ``t``) and the
batches and ops sent.

If the worker's busy time is close to the proxy's wall time, the worker sets the pace (its
per-op cost beside CuPy's own launch); if the waits are small and the issuing large, the
client does. With ``--timeline`` the workers time each message (``GPUWB_WORKER_PHASES``),
and each round's worker spans are laid beside the client's waits on the host's monotonic
clock: how much of the worker's busy time overlapped the client's issuing, how much the
client waited for, and how long it waited with no batch running (the round trips and
wake-ups). Medians over rounds; a table, then JSON.
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
from kernelproxy.session import Session  # noqa: E402

#: Session methods timed, by the part of the client's time they stand for. ``_wait_through``
#: is where every wait for a reply ends up, a held stretch's read on the fast path too
#: (which calls neither ``sync`` nor ``result``: before it was timed, such a wait was
#: counted in "rest", H200 run 171). A held op's issuing goes through no ``submit``: it is
#: in "rest".
TIMED = {"submit": "issue", "upload": "upload", "sync": "wait", "result": "wait",
         "_wait_through": "wait"}


class ClientClock:
    """Accumulates the time spent inside the timed Session methods, by part; a call made
    from inside another timed call counts as part of the outer one."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(set(TIMED.values()), 0.0)
        self.calls = dict.fromkeys(TIMED, 0)
        self.waits: list[tuple[float, float]] = []   # (start, end) of each outermost wait
        self._depth = 0
        self._originals = {name: getattr(Session, name) for name in TIMED}

    def __enter__(self) -> "ClientClock":
        for name, part in TIMED.items():
            setattr(Session, name, self._timed(name, part, self._originals[name]))
        return self

    def __exit__(self, *exc) -> None:
        for name, original in self._originals.items():
            setattr(Session, name, original)

    def _timed(self, name, part, original):
        clock = self

        def timed(*args, **kwargs):
            if clock._depth:
                return original(*args, **kwargs)
            clock._depth += 1
            clock.calls[name] += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                end = time.perf_counter()
                clock.seconds[part] += end - start
                if part == "wait":
                    clock.waits.append((start, end))
                clock._depth -= 1
        return timed


def profile_round(name, size, side, xp, session) -> dict:
    fn = PROGRAMS[name][0]
    module = _xp(side, xp, session)
    if session is None:
        start = time.perf_counter()
        fn(module, size)
        finish(xp, None)
        return {"wall_s": time.perf_counter() - start}
    worker, batches, seq = session.worker_seconds, session._batch, session._seq
    with ClientClock() as clock:
        start = time.perf_counter()
        fn(module, size)
        finish(xp, session)
        wall = time.perf_counter() - start
    client = sum(clock.seconds.values())
    return {"wall_s": wall, **{f"{part}_s": s for part, s in clock.seconds.items()},
            "rest_s": wall - client, "worker_busy_s": session.worker_seconds - worker,
            "batches": session._batch - batches, "ops": session._seq - seq,
            "calls": dict(clock.calls), "window": [start, start + wall], "waits": clock.waits}


def _length(spans) -> float:
    return sum(end - start for start, end in spans)


def _clip(spans, lo: float, hi: float) -> list:
    return [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]


def _intersection(a: list, b: list) -> float:
    """Total length of the overlap of two lists of disjoint, sorted spans."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def timeline(row: dict, worker_spans: list) -> dict:
    """The round's worker spans against its client waits (both sorted, each list disjoint)."""
    lo, hi = row.pop("window")
    waits = sorted(row.pop("waits"))
    busy = sorted(_clip(worker_spans, lo, hi))
    both = _intersection(busy, waits)
    return {"worker_busy_while_issuing_s": _length(busy) - both,
            "worker_busy_while_waited_s": both,
            "waited_with_no_batch_running_s": _length(waits) - both}


def worker_spans(directory: str, workers: int) -> list:
    """The message spans the session workers wrote to *directory* as their sessions ended."""
    return [tuple(span) for summary in read_summaries(directory, workers, patience=20.0)
            for span in summary.get("spans", [])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="mlp_training,kmeans")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--transports", default="ipc")
    parser.add_argument("--quick", action="store_true", help="programs.py's small sizes")
    parser.add_argument("--timeline", action="store_true",
                        help="the workers' message spans beside the client's waits")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    local, local_kind = local_module()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "local_kind": local_kind, "rounds": args.rounds, "programs": {}}
    phases = tempfile.mkdtemp(prefix="gpuwb-step-phases-") if args.timeline else None
    if phases:   # read by each worker as it starts
        os.environ["GPUWB_WORKER_PHASES"] = phases
    runs_of = {}
    with open_pool("fair", args.devices, False) as pool:
        with sessions_by_transport(pool, args.transports) as sessions:
            sides = [("local", local, None)] + [(f"proxy_{t}", None, s)
                                                for t, s in sessions.items()]
            for name in names:
                size = PROGRAMS[name][2 if args.quick else 1]
                for side, xp, session in sides:   # warm-up: kernels compiled, pools grown
                    profile_round(name, size, side, xp, session)
                runs = runs_of[name] = {side: [] for side, _x, _s in sides}
                for turn in range(args.rounds):   # A B C, C B A, ...
                    for side, xp, session in (sides if turn % 2 == 0 else sides[::-1]):
                        runs[side].append(profile_round(name, size, side, xp, session))
        # the workers write their spans as their sessions end, before the pool stops them
        spans = worker_spans(phases, len(sides) - 1) if phases else []
    if phases and not spans:
        print("no worker spans were written: the timeline is left out", file=sys.stderr)
    for name, runs in runs_of.items():
        for side, rows in runs.items():
            for row in rows:
                if "window" in row:
                    row.update(timeline(row, spans) if spans else {})
                    row.pop("window", None), row.pop("waits", None)
        out["programs"][name] = {side: _medians(rows) for side, rows in runs.items()}
    _print(out)
    emit(out, args.json)
    return 0


def _medians(rows: list[dict]) -> dict:
    keys = [k for k, v in rows[0].items() if isinstance(v, (int, float))]
    return {**{k: statistics.median(r[k] for r in rows) for k in keys}, "each": rows}


def _print(out: dict) -> None:
    parts = ("wall_s", "issue_s", "upload_s", "wait_s", "rest_s", "worker_busy_s")
    print(f"{'program / side':28}" + "".join(f"{p[:-2]:>13}" for p in parts)
          + f"{'batches':>9}{'ops':>8}   (ms; medians over rounds)")
    for name, sides in out["programs"].items():
        for side, row in sides.items():
            cells = "".join(f"{row[p] * 1e3:13.1f}" if p in row else f"{'':>13}" for p in parts)
            extra = f"{row['batches']:9.0f}{row['ops']:8.0f}" if "ops" in row else ""
            print(f"{name + ' / ' + side:28}{cells}{extra}")
            if "worker_busy_while_issuing_s" in row:
                print(f"{'':28}worker busy while the client issued {row['worker_busy_while_issuing_s'] * 1e3:.1f}"
                      f", while it waited {row['worker_busy_while_waited_s'] * 1e3:.1f}; waited with"
                      f" no batch running {row['waited_with_no_batch_running_s'] * 1e3:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
