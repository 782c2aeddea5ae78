"""The floor of the Generator programs of ``programs.py`` on local CuPy: one step of the
bootstrap (``rng.random``, ``rng.standard_normal``, the weighted mean) and of Monte Carlo π
with ``rng.uniform``, each run eagerly and read, and the same step captured once as a CUDA
graph (the Generator's draws inside it: docs/stretch-replay.md, "A Generator's draws made
inside the graphs"), launched and read. The graph's time is what the device itself needs for
a step: a pool whose worker replays the step as a graph cannot go below it; the eager time is
what local CuPy pays.

    python benchmarks/draw_floor.py [--n 1000000] [--steps 200] [--json out.json]

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


def _bootstrap(cp, n):
    rng = cp.random.default_rng(16)
    sample = cp.linspace(-1.0, 1.0, n)

    def step():
        w = rng.random(n)
        noisy = sample + 0.01 * rng.standard_normal(n)
        return (w * noisy).sum() / w.sum()
    return step


def _pi(cp, n):
    rng = cp.random.default_rng(18)

    def step():
        x = rng.uniform(-1.0, 1.0, n)
        y = rng.uniform(-1.0, 1.0, n)
        return ((x * x + y * y) <= 1.0).mean()
    return step


def _eager_us(cp, step, steps):
    """µs a step, each read (``float``), as a local loop does."""
    for _ in range(5):
        float(step())
    begin = time.perf_counter()
    for _ in range(steps):
        float(step())
    return (time.perf_counter() - begin) / steps * 1e6


def _graph_us(cp, step, steps):
    """µs a step as one captured graph, launched and read."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        float(step())   # (kernels built, outside the capture)
        stream.begin_capture()
        result = step()
        graph = stream.end_capture()
        for _ in range(5):
            graph.launch(stream)
            float(result)
        begin = time.perf_counter()
        for _ in range(steps):
            graph.launch(stream)
            float(result)
        return (time.perf_counter() - begin) / steps * 1e6


def _device_us(cp, step, steps):
    """µs a step of device time alone: the graph launched *steps* times back to back."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        step()
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        begin = time.perf_counter()
        for _ in range(steps):
            graph.launch(stream)
        stream.synchronize()
        return (time.perf_counter() - begin) / steps * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import cupy as cp
    rows = {}
    print(f"{'step':<22} {'eager µs':>10} {'graph µs':>10} {'device µs':>10}")
    for name, make in (("bootstrap", _bootstrap), ("monte_carlo_pi_rng", _pi)):
        eager = [_eager_us(cp, make(cp, args.n), args.steps) for _ in range(3)]
        graph = [_graph_us(cp, make(cp, args.n), args.steps) for _ in range(3)]
        device = [_device_us(cp, make(cp, args.n), args.steps) for _ in range(3)]
        rows[name] = {"eager_us": statistics.median(eager), "graph_us": statistics.median(graph),
                      "device_us": statistics.median(device)}
        print(f"{name:<22} {rows[name]['eager_us']:>10.1f} {rows[name]['graph_us']:>10.1f} "
              f"{rows[name]['device_us']:>10.1f}")
    emit({"benchmark": "draw_floor", "date": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "n": args.n,
          "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
