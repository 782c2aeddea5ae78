"""The floor of ``programs.py``'s ``fused_loop`` on local CuPy: one stretch of it (ten steps
of two fused calls, then the energy's fused reduction and its read) run eagerly, and the
same stretch captured once as a CUDA graph and launched, then read. The graph's time is
what the device itself needs for a stretch: a pool that replays the stretch as a graph
cannot go below it, and the eager time is what local CuPy pays (its fused calls' Python).

    python benchmarks/fused_floor.py [--n 1000000] [--stretches 200] [--json out.json]

Needs CuPy and a GPU. Prints a table, then JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)


def _functions(cp):
    @cp.fuse
    def velocity(v, x, k, damping):
        return v * damping - x * k

    @cp.fuse
    def moved(x, v, dt):
        return x + v * dt

    @cp.fuse
    def energy(x, v):
        return cp.sum(x * x + v * v)

    return velocity, moved, energy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--stretches", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import cupy as cp

    velocity, moved, energy = _functions(cp)
    x = cp.linspace(-1, 1, args.n, dtype=cp.float32)
    v = cp.zeros(args.n, dtype=cp.float32)

    def stretch(x, v):
        for _ in range(10):
            v = velocity(v, x, 0.01, 0.999)
            x = moved(x, v, 0.5)
        return x, v, energy(x, v)

    for _ in range(3):   # (compiled, cached)
        x, v, e = stretch(x, v)
        float(e)
    eager = []
    for _ in range(args.stretches):
        t = time.perf_counter()
        x, v, e = stretch(x, v)
        float(e)
        eager.append(time.perf_counter() - t)

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x2, v2 = x.copy(), v.copy()
        stream.synchronize()
        stream.begin_capture()
        x3, v3, e3 = stretch(x2, v2)
        graph = stream.end_capture()
        graphed, device = [], []
        start, end = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(args.stretches):
            t = time.perf_counter()
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            float(e3)   # (a read of the graph's result, as the loop's)
            graphed.append(time.perf_counter() - t)
            device.append(cp.cuda.get_elapsed_time(start, end) / 1e3)

    rows = {"eager": eager, "graph": graphed, "graph_device": device}
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/fused_floor.py " + " ".join(argv or sys.argv[1:]),
        "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "n": args.n, "stretches": args.stretches,
        "median_us": {k: statistics.median(v) * 1e6 for k, v in rows.items()},
        "p90_us": {k: sorted(v)[int(0.9 * len(v))] * 1e6 for k, v in rows.items()},
    }
    print(f"fused_loop's stretch (10 steps, 2 fused calls each, the energy read), n={args.n}")
    print(f"{'how':<14}{'median us':>12}{'p90 us':>12}")
    for k in rows:
        print(f"{k:<14}{result['median_us'][k]:>12.1f}{result['p90_us'][k]:>12.1f}")
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
