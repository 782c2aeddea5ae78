"""CuPy's graph API through the pool, side by side with local CuPy in one run.

    python benchmarks/graph_api.py [--devices auto] [--reps 2000] [--quick] [--json out.json]

A loop body of 20 element-wise ops on 1 000 float32 (``y = y * 1.0001`` and
``y = y + 0.5``, ten times each) whose result's first element is read as a Python float
each iteration. Four ways, median wall time per iteration (µs, 5 rounds):

* local eager: the body issued each iteration, then the read (local CuPy; NumPy where this
  machine has no GPU);
* local graph: the body captured once with CuPy's graph API (``Stream.begin_capture``,
  ``end_capture``), then ``g.launch()`` and the read each iteration (local CuPy only:
  NumPy has no graphs);
* proxy eager: the body through the pool each iteration (stretch replay as by default);
* proxy graph: the same capture through the pool: one launch op and one read op per
  iteration, one round trip.

Every side's values must equal local eager's. Prints a table, then one JSON object (also
written to --json). docs/architecture.md ("CuPy's graph API") quotes its figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelproxy.modules import module_for  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from programs import local_module  # noqa: E402
from served_pool import open_pool, sessions_by_transport  # noqa: E402

N = 1000
OPS = 20


def body(x):
    """The loop body: 20 element-wise ops."""
    y = x
    for _ in range(OPS // 2):
        y = y * 1.0001
        y = y + 0.5
    return y


def eager(xp):
    x = xp.arange(N, dtype=xp.float32)

    def step():
        return float(body(x)[0])
    return step


def graph(xp):
    """The body captured once (CuPy's graph API); each step launches it and reads."""
    x = xp.arange(N, dtype=xp.float32)
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        first = body(x)[0]   # (a view: no launch of its own)
        g = s.end_capture()
    s.synchronize()

    def step():
        g.launch()   # (on the current stream, which the read then waits for)
        return float(first)
    return step


def per_iteration(step, reps, session):
    values = [step() for _ in range(20)]   # warm-up: kernels built, stretches held
    worker0 = session.worker_seconds if session is not None else 0.0
    rounds = []
    per = max(1, reps // 5)
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per):
            values.append(step())
        rounds.append((time.perf_counter() - t0) / per * 1e6)
    worker = ((session.worker_seconds - worker0) / (5 * per) * 1e6) if session is not None else None
    return statistics.median(rounds), worker, values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="200 iterations a side")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    reps = 200 if args.quick else args.reps
    local, kind = local_module()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "local_kind": kind, "n": N, "ops": OPS, "reps": reps}
    if kind == "cupy":
        name = local.cuda.runtime.getDeviceProperties(0)["name"]
        out["gpu"] = name.decode() if isinstance(name, bytes) else name
    sides = {}
    wall, _, reference = per_iteration(eager(local), reps, None)
    sides["local eager"] = {"us": wall}
    if kind == "cupy":
        wall, _, values = per_iteration(graph(local), reps, None)
        sides["local graph"] = {"us": wall, "equal": values == reference}
    with open_pool("fair", args.devices, False) as pool, \
            sessions_by_transport(pool, "ipc") as sessions:
        session = sessions["ipc"]
        cp = module_for(session)
        out["pool_device"] = session.device.get("kind")
        for side, make in (("proxy eager", eager), ("proxy graph", graph)):
            ops0 = session.ops_issued
            wall, worker, values = per_iteration(make(cp), reps, session)
            sides[side] = {"us": wall, "worker_us": worker, "equal": values == reference,
                           "ops_per_iteration": (session.ops_issued - ops0) / (20 + 5 * max(1, reps // 5))}
        info = session.memory_info()
        out["stretches"], out["graphs"] = info.get("stretches"), info.get("graphs")
    base = sides["local eager"]["us"]
    for row in sides.values():
        row["vs_local_eager"] = row["us"] / base
    out["sides"] = sides
    print(f"{'side':12} {'us/iter':>9} {'vs local eager':>15} {'worker us':>10} {'ops/iter':>9}  equal")
    for side, row in sides.items():
        worker = f"{row['worker_us']:10.1f}" if row.get("worker_us") is not None else f"{'-':>10}"
        ops = f"{row['ops_per_iteration']:9.1f}" if "ops_per_iteration" in row else f"{'-':>9}"
        print(f"{side:12} {row['us']:9.1f} {row['vs_local_eager']:15.2f} {worker} {ops}  "
              f"{row.get('equal', True)}")
    if kind != "cupy":
        print("local graph: not measured (no CuPy here: NumPy has no graphs)")
    emit(out, args.json)


if __name__ == "__main__":
    main()
