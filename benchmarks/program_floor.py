"""How far below local CuPy could any pool go? Each curated program's device time, measured.

    python benchmarks/program_floor.py [--programs NAME,...] [--rounds 3] [--json out.json]

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
from programs import PROGRAMS, target_of  # noqa: E402

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


def measure(cp, torch, name: str, rounds: int) -> dict:
    """One program's row: its local wall time, the device's busy time in it, its set-up's
    (where it has a loop) and the floor they make against its target."""
    fn, size, _quick, _tol = PROGRAMS[name]
    fn(cp, size)                       # warm: kernels compiled, the memory pool grown
    _finish(cp)
    wall, walls = timed(cp, lambda: fn(cp, size), rounds)
    busy, ops = profiled_busy(cp, torch, lambda: fn(cp, size))
    if not ops:   # CUPTI recorded nothing: no floor, rather than a floor of 0
        raise RuntimeError(f"{name}: the profiler recorded no work on the device")
    row = {"program": name, "local_s": wall, "local_runs_s": walls, "device_busy_s": busy,
           "device_ops": ops, "device_floor": busy / wall}
    keyword = setup_call(fn)
    setup, setup_busy = 0.0, 0.0
    if keyword is not None:
        for left in (0, 1):   # (no iteration; one where the program's result needs one)
            try:
                fn(cp, size, **{keyword: left})
                break
            except Exception:
                continue
        else:
            raise RuntimeError(f"{name}: runs with neither 0 nor 1 iteration")
        _finish(cp)
        setup, setup_walls = timed(cp, lambda: fn(cp, size, **{keyword: left}), rounds)
        setup_busy, _ = profiled_busy(cp, torch, lambda: fn(cp, size, **{keyword: left}))
        row.update(setup_s=setup, setup_runs_s=setup_walls, setup_busy_s=setup_busy,
                   setup_iterations=left)
    floor = (setup + max(0.0, busy - setup_busy)) / wall
    target = target_of(name)
    row.update(floor=floor, host_s=max(0.0, wall - setup - max(0.0, busy - setup_busy)),
               target=target, target_reachable=floor <= target)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="", help="comma-separated names (default: all)")
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
    names = [n for n in args.programs.split(",") if n] or list(PROGRAMS)
    rows = [measure(cp, torch, name, args.rounds) for name in names]
    print(f"{'program':22} {'local ms':>9} {'busy ms':>9} {'ops':>7} {'set-up ms':>9} "
          f"{'device':>6} {'floor':>6} {'target':>6}  reachable")
    for r in rows:
        setup = f"{r['setup_s'] * 1e3:9.2f}" if "setup_s" in r else f"{'-':>9}"
        print(f"{r['program']:22} {r['local_s'] * 1e3:9.2f} {r['device_busy_s'] * 1e3:9.2f} "
              f"{r['device_ops']:7d} {setup} {r['device_floor']:6.2f} {r['floor']:6.2f} "
              f"{r['target']:6.2f}  {'yes' if r['target_reachable'] else 'NO'}")
    out_of_reach = [r["program"] for r in rows if not r["target_reachable"]]
    print(f"{len(out_of_reach)} of {len(rows)} programs' targets below their device floor: "
          + (", ".join(out_of_reach) or "none"))
    emit({"benchmark": "program_floor", "when": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
          "cupy": cp.__version__, "torch": torch.__version__, "rounds": args.rounds,
          "programs": rows}, args.json)


if __name__ == "__main__":
    main()
