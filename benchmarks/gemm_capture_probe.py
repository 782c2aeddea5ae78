"""Does a matrix product captured in a CUDA graph by cuBLAS's own call
(gpu_backend/devices/cupy_products.py) give CuPy's eager bits, and what does it save?

    python benchmarks/gemm_capture_probe.py [--reps 2000] [--json out.json]

For each case (shapes, dtypes, layouts of the products the pool's programs make: MLP's
minibatch layers, logistic regression's ``X @ w`` and ``X.T @ r``, CG's matrix-vector
product, transposed and strided operands, float64 and complex): CuPy's eager ``a @ b``; the
same product made by ``CapturedProducts.gemm`` inside a capture on a stream of its own,
the graph launched; the two compared bit for bit, then the operands rewritten in place and
the graph launched again, compared with CuPy's eager product of the new values. Then the
host's cost of an eager product against a graph launch (each the median of --reps calls,
synchronized every 100). Needs a GPU. Prints a table, then one JSON object.
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

from json_out import emit  # noqa: E402

#: (name, a's shape, b's shape, dtype, how a is made from a bigger array, how b is)
CASES = [
    ("mlp xb@w1", (256, 64), (64, 256), "f4", None, None),
    ("mlp h@w2", (256, 256), (256, 10), "f4", None, None),
    ("mlp h.T@grad", (256, 256), (256, 10), "f4", "T", None),
    ("mlp grad@w2.T", (256, 10), (10, 256), "f4", None, "T"),
    ("logreg X@w", (200_000, 32), (32,), "f4", None, None),
    ("logreg X.T@r", (32, 200_000), (200_000,), "f4", "T", None),
    ("cg A@p", (2048, 2048), (2048,), "f4", None, None),
    ("vector@matrix", (300,), (300, 70), "f4", None, None),
    ("odd 33x17@17x65", (33, 17), (17, 65), "f4", None, None),
    ("strided rows", (128, 64), (64, 96), "f4", "::2", None),
    ("big 4096", (4096, 4096), (4096, 4096), "f4", None, None),
    ("row@column", (1, 500), (500, 1), "f4", None, None),
    ("f8 200x300@300x100", (200, 300), (300, 100), "f8", None, None),
    ("c8 64x64@64x64", (64, 64), (64, 64), "c8", None, None),
    ("c16 50x40@40", (50, 40), (40,), "c16", None, None),
    ("batch 8x64x32@8x32x48", (8, 64, 32), (8, 32, 48), "f4", None, None),
    ("attention 2x4x16x8", (2, 4, 16, 8), (2, 4, 8, 16), "f4", None, None),
    ("batch f8 3x20x30@3x30x10", (3, 20, 30), (3, 30, 10), "f8", None, None),
    ("batch c8 4x6x6", (4, 6, 6), (4, 6, 6), "c8", None, None),
]


def _made(cp, rng, shape, dtype, how):
    """An operand of *shape* (after *how*: ``T`` a transpose, ``::2`` every other row)."""
    full = shape[::-1] if how == "T" else ((shape[0] * 2,) + shape[1:] if how == "::2" else shape)
    if how == "T" and len(shape) > 2:
        raise ValueError("a transposed batch: make it with swapaxes")
    host = rng.standard_normal(full)
    if np.dtype(dtype).kind == "c":
        host = host + 1j * rng.standard_normal(full)
    x = cp.asarray(host.astype(dtype))
    return x.T if how == "T" else (x[::2] if how == "::2" else x)


def _same_bits(x, y) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _median_us(fn, reps, sync) -> float:
    times = []
    for i in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if i % 100 == 99:
            sync()
    sync()
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import cupy as cp
    from gpu_backend.devices.cupy_products import CapturedProducts
    products = CapturedProducts(cp)
    rng = np.random.default_rng(5)
    stream = cp.cuda.Stream(non_blocking=True)
    rows, failures = [], 0
    print(f"{'case':22} {'dtype':5} {'graphed':8} {'bitwise':8} {'again':6} {'eager us':>9} {'launch us':>10}")
    for name, sa, sb, dtype, how_a, how_b in CASES:
        a = _made(cp, rng, sa, dtype, how_a)
        b = _made(cp, rng, sb, dtype, how_b)
        with stream:
            ref = a @ b
            stream.synchronize()
            stream.begin_capture()
            try:
                c = products.gemm(a, b)
            finally:
                graph = stream.end_capture()
            graphed = c is not None
            if not graphed:   # (CuPy's own path: a multiply and a sum, capturable as it is)
                stream.begin_capture()
                try:
                    c = a @ b
                finally:
                    graph = stream.end_capture()
            graph.launch(stream)
            stream.synchronize()
            bitwise = _same_bits(c.get(), ref.get())
            a[...] = a * 0.5 + 1     # new values in the same memory: the graph reads them
            b[...] = b * -1.25
            graph.launch(stream)
            again_ref = a @ b
            stream.synchronize()
            again = _same_bits(c.get(), again_ref.get())
            eager = _median_us(lambda: a @ b, args.reps, stream.synchronize)
            launch = _median_us(lambda: graph.launch(stream), args.reps, stream.synchronize)
        failures += not (bitwise and again)
        rows.append({"case": name, "a": list(sa), "b": list(sb), "dtype": dtype, "a_made": how_a,
                     "b_made": how_b, "graphed_by_cublas": graphed, "bitwise": bitwise,
                     "bitwise_after_rewrite": again, "eager_us": round(eager, 2),
                     "launch_us": round(launch, 2)})
        print(f"{name:22} {dtype:5} {str(graphed):8} {str(bitwise):8} {str(again):6} {eager:9.1f} {launch:10.1f}")
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python3 " + " ".join([os.path.relpath(__file__)] + (argv or sys.argv[1:])),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cupy": cp.__version__,
          "cases": rows, "failures": failures}, args.json)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
