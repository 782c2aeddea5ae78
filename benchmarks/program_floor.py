"""How far below local CuPy could any pool go? Each curated program's device time, measured.

    python benchmarks/program_floor.py [--programs NAME,...] [--rounds 3] [--json out.json]
    python benchmarks/program_floor.py --unseen [--campaigns kept_pieces,...] [--budget 400]

Issue 50 asks every loop of ``programs.py`` for <= 0.5x local CuPy's wall time. A pool that
gives CuPy's results bit for bit runs CuPy's own kernels, copies and fills on the same GPU
(captured into graphs or not), so the time the GPU is busy with them in a local run is a
floor no pool design goes below: the launches, the Python and the round trips can be cut
away, the kernels cannot. This runs each program on local CuPy ``--rounds`` times (the
median wall time), then once more under PyTorch's profiler, whose CUPTI tracing records
every kernel, copy and fill of the process, CuPy's included, and takes the union of their
intervals on the device: the device's busy time.

``device_floor`` is busy time over local wall time. A program's own host work is paid on
both sides as well: most programs make their data with NumPy and upload it before their
loop. So each program with a loop is also run with its loop count at 0 (1 where the
program needs one iteration), timed and profiled the same way: its *set-up*. ``floor`` is
(set-up's wall time + the device's busy time outside the set-up) over the whole program's
wall time, the least ratio to local any pool that runs the same kernels and the same host
code can reach; where it is above the target (0.5 for a loop, 1.0 otherwise) the target is
out of reach of any such design. The rest (``host``) is what local CuPy spends on the host
in its loop while the GPU waits: what a pool can win back.

``--unseen`` takes the unseen campaigns' loops instead (``unseen_programs.py``: each
``fn(xp, n)`` runs *n* iterations; its set-up is ``fn(xp, 0)``, or 1), judged as
``programs.py`` judges a program (``target_of``: 0.5 from 20 iterations, else 1.0). A loop
whose set-up runs at neither count keeps the device's floor alone (``setup_failed``); one
local CuPy cannot run is listed as not measured.

Needs CuPy, PyTorch (for its profiler) and a GPU; prints a table, then JSON.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)
from programs import LOOP_ITERATIONS, LOOP_TARGET, PROGRAMS, TARGET, target_of  # noqa: E402

#: Chrome-trace categories of work on the device (kernels, copies, fills).
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [start, end) intervals: overlapping work counted once."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def device_intervals(trace: dict) -> list[tuple[float, float]]:
    """(start, end) in µs of every kernel, copy and fill in a Chrome trace."""
    out = []
    for event in trace.get("traceEvents", []):
        if event.get("ph") == "X" and event.get("cat") in DEVICE_CATEGORIES:
            start = float(event["ts"])
            out.append((start, start + float(event.get("dur", 0.0))))
    return out


def _finish(cp):
    cp.cuda.get_current_stream().synchronize()


#: A program's loop count, by the name its function gives it.
LOOP_KEYWORDS = ("steps", "iterations", "max_iterations")


def setup_call(fn) -> str | None:
    """The keyword that sets *fn*'s loop count (its set-up is *fn* with it at 0), or None
    for a program with no loop."""
    names = inspect.signature(fn).parameters
    return next((k for k in LOOP_KEYWORDS if k in names), None)


def timed(cp, call, rounds: int) -> tuple[float, list]:
    """The median wall time of *call* (each ended by a stream sync), and each."""
    walls = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        call()
        _finish(cp)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), walls


def profiled_busy(cp, torch, call) -> tuple[float, int]:
    """Seconds the device is busy in *call* (CUPTI's kernels, copies, fills), and how many."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        call()
        _finish(cp)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            intervals = device_intervals(json.load(f))
    return busy_us(intervals) / 1e6, len(intervals)


class Loop:
    """What the floor needs of one program: a run at its size, the set-ups to try (its loop
    count at 0, then 1, as calls; none for a program with no loop) and its target."""

    def __init__(self, name: str, run, setups: list, target: float, kind: str) -> None:
        self.name, self.run, self.setups, self.target, self.kind = name, run, setups, target, kind


def curated(cp, name: str) -> Loop:
    """A program of ``programs.py`` at its full size."""
    fn, size, _quick, _tol = PROGRAMS[name]
    keyword = setup_call(fn)
    setups = [] if keyword is None else [
        (lambda left=left: fn(cp, size, **{keyword: left})) for left in (0, 1)]
    return Loop(name, lambda: fn(cp, size), setups, target_of(name), "curated")


def unseen(cp, name: str) -> Loop:
    """A loop of the unseen campaigns (``unseen_programs.PROGRAMS``: ``fn(xp, n)`` runs *n*
    iterations), judged as ``programs.target_of`` judges a program: 0.5 from 20 iterations,
    else 1.0."""
    from unseen_programs import PROGRAMS as UNSEEN
    fn, n, _numpy_too = UNSEEN[name]
    return Loop(name, lambda: fn(cp, n), [(lambda left=left: fn(cp, left)) for left in (0, 1)],
                LOOP_TARGET if n >= LOOP_ITERATIONS else TARGET, "unseen")


def measure(cp, torch, loop: Loop, rounds: int) -> dict:
    """One program's row: its local wall time, the device's busy time in it, its set-up's
    (the first of its set-ups that runs; none: the device's floor alone) and the floor they
    make against its target."""
    loop.run()                         # warm: kernels compiled, the memory pool grown
    _finish(cp)
    wall, walls = timed(cp, loop.run, rounds)
    busy, ops = profiled_busy(cp, torch, loop.run)
    if not ops:   # CUPTI recorded nothing: no floor, rather than a floor of 0
        raise RuntimeError(f"{loop.name}: the profiler recorded no work on the device")
    row = {"program": loop.name, "kind": loop.kind, "local_s": wall, "local_runs_s": walls,
           "device_busy_s": busy, "device_ops": ops, "device_floor": busy / wall}
    setup, setup_busy = 0.0, 0.0
    for left, call in enumerate(loop.setups):   # (no iteration; one where the result needs one)
        try:
            call()
            _finish(cp)
        except Exception:
            continue
        setup, setup_walls = timed(cp, call, rounds)
        setup_busy, _ = profiled_busy(cp, torch, call)
        row.update(setup_s=setup, setup_runs_s=setup_walls, setup_busy_s=setup_busy,
                   setup_iterations=left)
        break
    else:
        if loop.setups:   # (a loop that needs its iterations: the device's floor alone)
            row["setup_failed"] = True
    floor = (setup + max(0.0, busy - setup_busy)) / wall
    row.update(floor=floor, host_s=max(0.0, wall - setup - max(0.0, busy - setup_busy)),
               target=loop.target, target_reachable=floor <= loop.target)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="", help="comma-separated names (default: all)")
    parser.add_argument("--unseen", action="store_true",
                        help="the unseen campaigns' loops (unseen_programs.py), not programs.py's")
    parser.add_argument("--campaigns", default="", help="with --unseen: only these campaigns")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds after which no further program is begun (0: no limit)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        import torch
        torch.cuda.init()
    except Exception as exc:  # no GPU, CuPy or PyTorch here
        sys.exit(f"program_floor.py needs CuPy, PyTorch and a GPU: {exc}")
    names = [n for n in args.programs.split(",") if n]
    if args.unseen:
        from unseen_programs import CAMPAIGN_OF, PROGRAMS as UNSEEN
        campaigns = {c for c in args.campaigns.split(",") if c}
        names = names or [n for n in UNSEEN if not campaigns or CAMPAIGN_OF[n] in campaigns]
        make = unseen
    else:
        names = names or list(PROGRAMS)
        make = curated
    rows, failed, not_begun = [], {}, []
    began = time.perf_counter()
    for name in names:
        if args.budget and time.perf_counter() - began > args.budget:
            not_begun.append(name)
            continue
        try:
            rows.append(measure(cp, torch, make(cp, name), args.rounds))
        except Exception as exc:   # (a loop local CuPy cannot run: said, the rest measured)
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    print(f"{'program':36} {'local ms':>9} {'busy ms':>9} {'ops':>7} {'set-up ms':>9} "
          f"{'device':>6} {'floor':>6} {'target':>6}  reachable")
    for r in rows:
        setup = f"{r['setup_s'] * 1e3:9.2f}" if "setup_s" in r else f"{'-':>9}"
        print(f"{r['program']:36} {r['local_s'] * 1e3:9.2f} {r['device_busy_s'] * 1e3:9.2f} "
              f"{r['device_ops']:7d} {setup} {r['device_floor']:6.2f} {r['floor']:6.2f} "
              f"{r['target']:6.2f}  {'yes' if r['target_reachable'] else 'NO'}")
    out_of_reach = [r["program"] for r in rows if not r["target_reachable"]]
    print(f"{len(out_of_reach)} of {len(rows)} programs' targets below their floor: "
          + (", ".join(out_of_reach) or "none"))
    if failed:
        print(f"{len(failed)} not measured: " + "; ".join(f"{n} ({why})" for n, why in failed.items()))
    if not_begun:
        print(f"{len(not_begun)} not begun (--budget)")
    emit({"benchmark": "program_floor", "when": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
          "cupy": cp.__version__, "torch": torch.__version__, "rounds": args.rounds,
          "unseen": args.unseen, "programs": rows, "failed": failed, "not_begun": not_begun},
         args.json)


if __name__ == "__main__":
    main()
