"""Stretch replay on and off, per iteration, side by side with local CuPy in one run.

    python benchmarks/replay_sync.py [--devices auto] [--reps 2000] [--json out.json]

For two loops — the hot sync ``float((x + 1).sum())`` on 1 000 float32 and a 512 x 512
stencil step with its largest change read — it reports the median wall time per
iteration locally and through the pool over the same-host link with stretch replay on
(the default) and off (``GPUWB_GRAPHS=0``), and the worker's own time per iteration
(the replies' ``t``): issue 37's "worker's cost for a 3-op sync batch within local
CuPy's time + 20 µs". Each side's results must be bitwise equal to local CuPy's. The
raw round trip of a Unix socket, measured in the same run, gives the hot sync's target
(raw + local + 20 µs). Prints a table, then one JSON object (also written to --json).
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
from raw_transport import bench_raw  # noqa: E402
from served_pool import open_pool, sessions_by_transport, use_side  # noqa: E402


def hot_sync(xp):
    x = xp.arange(1000, dtype=xp.float32)

    def step(i):
        return float((x + 1).sum())
    return step


def stencil(xp):
    state = {"u": xp.asarray(np.random.default_rng(5).random((512, 512), dtype=np.float32))}

    def step(i):
        u = state["u"]
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += 0.2 * lap
        state["u"] = u
        return float(xp.abs(lap).max())
    return step


LOOPS = {"hot_sync": hot_sync, "stencil": stencil}


def per_iteration(step, reps, session):
    values = [step(i) for i in range(20)]   # warm-up: kernels built, stretches held
    worker0 = session.worker_seconds if session is not None else 0.0
    rounds = []
    per = max(1, reps // 5)
    for _ in range(5):
        t0 = time.perf_counter()
        for i in range(per):
            values.append(step(i))
        rounds.append((time.perf_counter() - t0) / per * 1e6)
    worker = ((session.worker_seconds - worker0) / (5 * per) * 1e6) if session is not None else None
    return statistics.median(rounds), worker, values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    local, kind = local_module()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "local_kind": kind}
    if kind == "cupy":
        name = local.cuda.runtime.getDeviceProperties(0)["name"]
        out["gpu"] = name.decode() if isinstance(name, bytes) else name
    rows = {}
    with open_pool("fair", args.devices, False) as pool, \
            sessions_by_transport(pool, "ipc,ipc-nographs") as sessions:
        for loop, make in LOOPS.items():
            row = {}
            wall, _, reference = per_iteration(make(local), args.reps, None)
            row["local"] = {"us": wall}
            for side, session in sessions.items():
                use_side(side, session)
                wall, worker, values = per_iteration(make(module_for(session)), args.reps, session)
                row[side] = {"us": wall, "worker_us": worker, "vs_local": wall / row["local"]["us"],
                             "bitwise_local": values == reference}
            rows[loop] = row
        out["stretches"] = {t: s.memory_info().get("stretches") for t, s in sessions.items()}
    out["loops"] = rows
    # the hot sync's target: the raw round trip (a Unix socket, as ipc:// sessions use) +
    # local CuPy's own time + 20 us, from this run
    raw = bench_raw(1 << 20, 1, "unix", idle_reps=10)["rtt_small_us"]
    out["raw_rtt_us"] = raw
    out["hot_sync_target_us"] = raw + rows["hot_sync"]["local"]["us"] + 20.0
    print(f"{'loop':10} {'local us':>9} {'replay us':>10} {'ratio':>6} {'worker':>7} "
          f"{'no replay us':>13} {'ratio':>6} {'worker':>7}  bitwise")
    for loop, row in rows.items():
        on, off = row["ipc"], row["ipc-nographs"]
        print(f"{loop:10} {row['local']['us']:9.1f} {on['us']:10.1f} {on['vs_local']:6.2f} "
              f"{on['worker_us']:7.1f} {off['us']:13.1f} {off['vs_local']:6.2f} {off['worker_us']:7.1f}"
              f"  {on['bitwise_local'] and off['bitwise_local']}")
    print(f"raw round trip (Unix socket) {raw:.1f} us; hot sync target {out['hot_sync_target_us']:.1f} us")
    emit(out, args.json)


if __name__ == "__main__":
    main()
