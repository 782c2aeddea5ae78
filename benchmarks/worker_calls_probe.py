"""What the worker's CUDA calls cost the host, one by one, on this GPU host.

    python benchmarks/worker_calls_probe.py [--reps 2000] [--json out.json]

Why (issue 50): a drawing loop's replay costs its worker ~185 µs a step on an H200 host (run
191), where local CuPy's whole step is 120–230 µs; cProfile gave ~5 ``memcpyAsync`` calls a
replayed message at ~10 µs each (the graphs' copy tables, a changed parameter written from
the host, the scalar read). This times each primitive the worker's replay is made of, and
their alternatives, as the median host time of one call (the stream drained every 50 calls,
outside the timing), so that a change to the replay path is chosen by what it saves here:

- ``memcpyAsync`` device to device at 8 B, 4 MB and 8 MB; host to device 8 B from pageable
  and from pinned memory; device to host 8 B into pageable and pinned memory, then a
  ``streamSynchronize``;
- ``cuMemsetD32Async`` (the driver's, through ctypes: a 4-byte value set with no staging);
- a one-kernel graph's launch; an ``ElementwiseKernel`` launch on 1 M float64;
- ``RandomState.random_sample(1 M)`` (an allocation, cuRAND's call, CuPy's ``_mod1`` kernel)
  against cuRAND's call alone into an array of ours, and the same inside
  ``cupy.cuda.using_allocator`` (the draw made straight into a buffer of ours);
- ``cupy.empty(1 M)`` and its free.

Needs a GPU. Prints a table, then one JSON object.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402

N = 1_000_000


def timed(fn, reps: int, drain) -> dict:
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if i % 50 == 49:
            drain()
    drain()
    times.sort()
    return {"median_us": statistics.median(times) * 1e6, "p10_us": times[len(times) // 10] * 1e6,
            "p90_us": times[9 * len(times) // 10] * 1e6}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    import cupy as cp
    from cupy_backends.cuda.libs import curand

    rt = cp.cuda.runtime
    stream = cp.cuda.Stream(non_blocking=True)
    stream.use()
    drain = stream.synchronize
    sp = stream.ptr
    small_a, small_b = cp.zeros(1), cp.zeros(1)
    mid_a, mid_b = cp.zeros(N // 2), cp.zeros(N // 2)     # 4 MB
    big_a, big_b = cp.zeros(N), cp.zeros(N)               # 8 MB
    host = np.zeros(1)
    pinned_mem = cp.cuda.alloc_pinned_memory(8)
    pinned = np.frombuffer(pinned_mem, np.float64, 1)
    libcuda = ctypes.CDLL("libcuda.so.1")
    memset32 = libcuda.cuMemsetD32Async
    memset32.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p]
    add_one = cp.ElementwiseKernel("T x", "T y", "y = x + 1", "gpuwb_probe_add_one")
    graph_stream = cp.cuda.Stream(non_blocking=True)
    with graph_stream:
        graph_stream.begin_capture()
        add_one(big_a, big_b)
        graph = graph_stream.end_capture()
    rs = cp.random.RandomState(3)
    mine = cp.empty(N)
    kept = cp.empty(N)

    def draw_into_ours():
        curand.generateUniformDouble(rs._generator, mine.data.ptr, N)

    def draw_through_allocator():
        def malloc(nbytes):
            return kept.data if nbytes == kept.nbytes else cp.cuda.alloc(nbytes)
        with cp.cuda.using_allocator(malloc):
            rs.random_sample(N)

    def empty_and_free():
        a = cp.empty(N)
        del a

    cases = {
        "memcpyAsync D2D 8 B": lambda: rt.memcpyAsync(small_b.data.ptr, small_a.data.ptr, 8, rt.memcpyDeviceToDevice, sp),
        "memcpyAsync D2D 4 MB": lambda: rt.memcpyAsync(mid_b.data.ptr, mid_a.data.ptr, mid_a.nbytes, rt.memcpyDeviceToDevice, sp),
        "memcpyAsync D2D 8 MB": lambda: rt.memcpyAsync(big_b.data.ptr, big_a.data.ptr, big_a.nbytes, rt.memcpyDeviceToDevice, sp),
        "memcpyAsync H2D 8 B pageable": lambda: rt.memcpyAsync(small_a.data.ptr, host.ctypes.data, 8, rt.memcpyHostToDevice, sp),
        "memcpyAsync H2D 8 B pinned": lambda: rt.memcpyAsync(small_a.data.ptr, pinned.ctypes.data, 8, rt.memcpyHostToDevice, sp),
        "cuMemsetD32Async 2 words": lambda: (memset32(small_a.data.ptr, 7, 1, sp), memset32(small_a.data.ptr + 4, 9, 1, sp)),
        "memcpyAsync D2H 8 B pageable + sync": lambda: (rt.memcpyAsync(host.ctypes.data, small_a.data.ptr, 8, rt.memcpyDeviceToHost, sp), rt.streamSynchronize(sp)),
        "memcpyAsync D2H 8 B pinned + sync": lambda: (rt.memcpyAsync(pinned.ctypes.data, small_a.data.ptr, 8, rt.memcpyDeviceToHost, sp), rt.streamSynchronize(sp)),
        "streamSynchronize (idle)": lambda: rt.streamSynchronize(sp),
        "graph launch (1 kernel, 1 M)": lambda: graph.launch(stream),
        "ElementwiseKernel launch (1 M)": lambda: add_one(big_a, big_b),
        "RandomState.random_sample(1 M)": lambda: rs.random_sample(N),
        "curand generateUniformDouble into ours": draw_into_ours,
        "random_sample through using_allocator": draw_through_allocator,
        "cupy.empty(1 M) and free": empty_and_free,
    }
    results = {}
    print(f"{'call':44} {'median µs':>10} {'p10':>8} {'p90':>8}")
    for name, fn in cases.items():
        for _ in range(50):
            fn()
        drain()
        results[name] = timed(fn, args.reps, drain)
        r = results[name]
        print(f"{name:44} {r['median_us']:10.2f} {r['p10_us']:8.2f} {r['p90_us']:8.2f}")
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python " + " ".join([os.path.relpath(__file__)] + sys.argv[1:]),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "reps": args.reps,
          "calls": results}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
