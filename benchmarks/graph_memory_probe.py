"""Does a captured stretch run slower on the GPU because none of its temporaries share memory?
(issue 50: n-body's worker waited 430 µs a replay for its graph, H100 run 41.)

    python benchmarks/graph_memory_probe.py [--launches 50] [--json out.json]   (a GPU with CuPy)

The worker captures a stretch with every allocation kept for the graph
(devices/cupy_graphs.py, ``GraphTools.retaining``): a temporary freed halfway through the
stretch keeps its block, and the next op's result gets a new one, so a graph of a dozen
50 MB temporaries touches 600 MB where CuPy's eager run, whose pool hands a freed block to
the next allocation of its size, touches a fraction of it (and finds more of it in L2).
This probe captures each body twice with plain CuPy on one stream, then times the GPU per
launch (CUDA events around ``--launches`` launches, after 5 launches of warm-up):

* ``reuse``: CuPy's pool as it is, a block freed during the capture handed to the next
  allocation of its size in the same capture (what eager CuPy does on one stream);
* ``retained``: every allocation kept until the graph goes (the worker's way today);

beside the eager body's own GPU time (events around the ops, the host far ahead: each op
queued behind a 20 ms sleep kernel so that the GPU never waits for the host). The bodies:
n-body's step at 2 048 bodies (``program_bodies.nbody``), heat2d's update at 512² and 2048²,
a 20-op elementwise chain on 4 M float32. Prints a table, then JSON; also checks that both
graphs give eager's results bitwise.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)
from program_bodies import chain20_body, heat2d_update  # noqa: E402


def nbody_step(cp, n=2048, dt=1e-3, soft=1e-2):
    rng = cp.random.RandomState(9)
    pos = rng.standard_normal((n, 3), dtype=cp.float32)
    vel = rng.standard_normal((n, 3), dtype=cp.float32) * 0.1
    mass = (rng.random_sample(n, dtype=cp.float32) + 0.5) / n

    def body(pos, vel):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(axis=2) + soft * soft
        inv_r = 1.0 / cp.sqrt(r2)
        inv_r3 = inv_r * inv_r * inv_r
        acc = (d * (mass[None, :] * inv_r3)[:, :, None]).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
        kinetic = 0.5 * (mass[:, None] * vel * vel).sum()
        potential = -0.5 * (mass[:, None] * mass[None, :] * inv_r).sum()
        return pos, vel, kinetic + potential
    return body, (pos, vel)


def heat(cp, n):
    u = cp.random.RandomState(5).random_sample((n, n), dtype=cp.float32)

    def body(u):
        u = u.copy()             # (the update writes in place: a copy keeps the input)
        return u, heat2d_update(u)
    return body, (u,)


def chain(cp, n=1 << 22):
    rs = cp.random.RandomState(10)
    x, y = rs.random_sample(n, dtype=cp.float32), rs.random_sample(n, dtype=cp.float32)

    def body(x, y):
        return chain20_body(x, y)
    return body, (x, y)


BODIES = {"nbody 2048": nbody_step, "heat2d 512": lambda cp: heat(cp, 512),
          "heat2d 2048": lambda cp: heat(cp, 2048), "chain20 4M": chain}


def _flat(out):
    return out if isinstance(out, tuple) else (out,)


def capture(cp, body, inputs, retain: bool):
    """The body captured on a stream of its own; (graph, outputs, bytes allocated, kept)."""
    stream = cp.cuda.Stream(non_blocking=True)
    base = cp.cuda.get_allocator()
    kept, sizes = [], []

    def malloc(size):
        pointer = base(size)
        sizes.append(size)
        if retain:
            kept.append(pointer)
        return pointer

    with cp.cuda.using_allocator(malloc), stream:
        stream.begin_capture()
        outputs = _flat(body(*inputs))
        graph = stream.end_capture()
    return graph, outputs, sum(sizes), kept, stream


def gpu_us(cp, launch, launches, stream):
    for _ in range(5):
        launch()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(launches):
        launch()
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1000.0 / launches


def eager_gpu_us(cp, body, inputs, launches):
    """The eager body's GPU time an iteration, the host queued far ahead (a sleep first)."""
    stream = cp.cuda.Stream(non_blocking=True)
    sleep = cp.RawKernel(r'''extern "C" __global__ void gpuwb_nap(long long cycles) {
        long long t0 = clock64(); while (clock64() - t0 < cycles) {} }''', "gpuwb_nap")
    with stream:
        for _ in range(3):
            _flat(body(*inputs))
        stream.synchronize()
        sleep((1,), (1,), (cp.int64(2_000_000_000),))   # ~1 s of spinning on one thread
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)   # (recorded after the nap: the nap's end starts the clock)
        outs = None
        for _ in range(launches):
            outs = _flat(body(*inputs))
        end.record(stream)
        end.synchronize()
    del outs
    return cp.cuda.get_elapsed_time(start, end) * 1000.0 / launches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import cupy as cp

    rows = []
    for name, make in BODIES.items():
        body, inputs = make(cp)
        want = [o.copy() for o in _flat(body(*inputs))]
        row = {"body": name, "eager_gpu_us": eager_gpu_us(cp, body, inputs, args.launches)}
        for side, retain in (("reuse", False), ("retained", True)):
            cp.get_default_memory_pool().free_all_blocks()
            graph, outputs, nbytes, kept, stream = capture(cp, body, inputs, retain)
            graph.launch(stream)
            stream.synchronize()
            row[f"{side}_bitwise"] = all(bool((o == w).all()) for o, w in zip(outputs, want))
            row[f"{side}_gpu_us"] = gpu_us(cp, functools.partial(graph.launch, stream), args.launches, stream)
            row[f"{side}_mb"] = nbytes / 2 ** 20
            row[f"{side}_pool_mb"] = cp.get_default_memory_pool().total_bytes() / 2 ** 20
            del graph, outputs, kept
        rows.append(row)
    print(f"{'body':14} {'eager GPU us':>13} {'graph reuse us':>15} {'retained us':>12} "
          f"{'retained/reuse':>15} {'pool MB reuse':>14} {'retained':>9} bitwise")
    for r in rows:
        print(f"{r['body']:14} {r['eager_gpu_us']:13.1f} {r['reuse_gpu_us']:15.1f} {r['retained_gpu_us']:12.1f} "
              f"{r['retained_gpu_us'] / r['reuse_gpu_us']:15.2f} {r['reuse_pool_mb']:14.0f} "
              f"{r['retained_pool_mb']:9.0f} {r['reuse_bitwise'] and r['retained_bitwise']}")
    emit({"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cupy": cp.__version__,
          "launches": args.launches, "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
