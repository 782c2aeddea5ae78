"""Can a long op be split into pieces no longer than a quantum, with CuPy's own results?

    python benchmarks/split_probe.py [--quantum-ms 2] [--json out.json]     (a GPU with CuPy)
    python benchmarks/split_probe.py --numpy                                  (NumPy, anywhere)

Issue 38's design question, measured with plain CuPy in one process (no pool). Beside a
user whose kernels run tens of milliseconds, a fair arbiter can only hand the device over
between kernels; splitting a long op into pieces lets it hand over between pieces. That is
only allowed where the pieces together give *bitwise* what the whole op gives. For each op
and each way of splitting it this prints:

* the whole op's device time (CUDA events, median of a few),
* the pieces needed for each to stay within the quantum, and their summed device time
  (the cost of splitting),
* whether the pieces, put together, are bitwise equal to the whole op.

The ops: GEMMs (fp32, fp64, fp16; split by row blocks of A, by column blocks of B, and by
blocks of the inner dimension, which changes the sums and is expected to differ),
elementwise ops (by ranges), reductions (along an axis, split across the other axis; and
over everything, split by ranges: expected to differ), batched FFTs (split by batch).
Prints a table, then one JSON object (also written to --json).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)


class _Timer:
    """Device time of a call: CUDA events on a GPU, the wall clock for NumPy."""

    def __init__(self, xp) -> None:
        self.xp = xp

    def __call__(self, fn, reps: int = 3) -> float:
        xp = self.xp
        times = []
        for _ in range(reps):
            if xp is np:
                import time
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
                continue
            start, end = xp.cuda.Event(), xp.cuda.Event()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(xp.cuda.get_elapsed_time(start, end))
        return statistics.median(times)


def _bitwise(xp, a, b) -> bool:
    a, b = xp.ascontiguousarray(a), xp.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        (a.reshape(-1).view(xp.uint8) == b.reshape(-1).view(xp.uint8)).all())


def _ranges(n: int, pieces: int) -> list[tuple[int, int]]:
    step = -(-n // pieces)
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _split_case(xp, timer, quantum_ms, name, whole, split, length, align=1, pieces=None):
    """*whole()*: the op; *split(parts)*: the op in pieces over the [lo, hi) ranges *parts*
    of the split dimension of *length*, joined into one result; *pieces*: how many (by
    default, as many as keep each within the quantum)."""
    reference = whole()
    whole_ms = timer(whole)
    if pieces is None:
        pieces = max(1, int(-(-whole_ms // quantum_ms)))
        pieces = min(pieces, max(1, length // align))

    def run_split():
        return split(_ranges(length, pieces))

    joined = run_split()
    split_ms = timer(run_split)
    return {"op": name, "whole_ms": round(whole_ms, 3), "pieces": pieces,
            "split_ms": round(split_ms, 3), "cost": round(split_ms / whole_ms, 3) if whole_ms else None,
            "bitwise": _bitwise(xp, reference, joined)}


def cases(xp, quantum_ms: float, small: bool):
    timer = _Timer(xp)
    rng = np.random.default_rng(0)
    n = 1024 if small else 8192
    rows = []
    for dtype in ("float32", "float64", "float16"):
        a = xp.asarray(rng.standard_normal((n, n)).astype(dtype))
        b = xp.asarray(rng.standard_normal((n, n)).astype(dtype))

        def by_rows(parts, a=a, b=b):
            out = xp.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
            for lo, hi in parts:
                xp.matmul(a[lo:hi], b, out=out[lo:hi])
            return out

        def by_cols(parts, a=a, b=b):
            out = xp.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
            for lo, hi in parts:
                out[:, lo:hi] = a @ b[:, lo:hi]
            return out

        def by_inner(parts, a=a, b=b):
            out = xp.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
            for lo, hi in parts:
                out += a[:, lo:hi] @ b[lo:hi]
            return out

        for how, split in (("rows", by_rows), ("columns", by_cols), ("inner (sums change)", by_inner)):
            rows.append(_split_case(xp, timer, quantum_ms, f"matmul {n}² {dtype} by {how}",
                                    lambda a=a, b=b: a @ b, split, n, align=128))
        if dtype == "float32":   # which piece counts, if any, keep cuBLAS's results
            for pieces in (2, 4, 8, 16, 32, 64):
                rows.append(_split_case(xp, timer, quantum_ms, f"matmul {n}² {dtype} by rows, {pieces}",
                                        lambda a=a, b=b: a @ b, by_rows, n, pieces=pieces))
    m = (1 << 24) if small else (1 << 28)
    x = xp.asarray(rng.standard_normal(m, dtype=np.float32))

    def ew_whole():
        return xp.sin(x) * 2 + 1

    def ew_split(parts):
        out = xp.empty_like(x)
        for lo, hi in parts:
            out[lo:hi] = xp.sin(x[lo:hi]) * 2 + 1
        return out
    rows.append(_split_case(xp, timer, quantum_ms, f"sin(x) * 2 + 1, {m:,} float32 by ranges",
                            ew_whole, ew_split, m))
    side = 4096 if small else 16384
    y = xp.asarray(rng.standard_normal((side, side), dtype=np.float32))

    def red_rows(parts):
        out = xp.empty(side, dtype=y.dtype)
        for lo, hi in parts:
            out[lo:hi] = y[lo:hi].sum(axis=1)
        return out
    rows.append(_split_case(xp, timer, quantum_ms, f"sum(axis=1) {side}² float32 by rows",
                            lambda: y.sum(axis=1), red_rows, side))

    def red_all(parts):
        return xp.stack([y.reshape(-1)[lo * side:hi * side].sum() for lo, hi in parts]).sum()
    rows.append(_split_case(xp, timer, quantum_ms, f"sum() {side}² float32 by ranges (sums change)",
                            lambda: y.sum(), red_all, side))
    batch, length = (64, 1 << 14) if small else (256, 1 << 18)
    z = xp.asarray(rng.standard_normal((batch, length)).astype(np.complex64))

    def fft_split(parts):
        out = xp.empty_like(z)
        for lo, hi in parts:
            out[lo:hi] = xp.fft.fft(z[lo:hi], axis=1)
        return out
    rows.append(_split_case(xp, timer, quantum_ms, f"fft {batch} x {length:,} complex64 by batch",
                            lambda: xp.fft.fft(z, axis=1), fft_split, batch))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quantum-ms", type=float, default=2.0)
    parser.add_argument("--numpy", action="store_true", help="NumPy (small sizes), no GPU needed")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.numpy:
        xp, where = np, "numpy"
    else:
        import cupy as xp
        name = xp.cuda.runtime.getDeviceProperties(0)["name"]
        where = name.decode() if isinstance(name, bytes) else name
    rows = cases(xp, args.quantum_ms, small=args.numpy)
    print(f"{'op':52} {'whole ms':>9} {'pieces':>6} {'split ms':>9} {'cost':>6}  bitwise")
    for r in rows:
        print(f"{r['op']:52} {r['whole_ms']:9.3f} {r['pieces']:6d} {r['split_ms']:9.3f} "
              f"{(r['cost'] or 0):6.2f}  {r['bitwise']}")
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "device": where,
          "quantum_ms": args.quantum_ms, "cases": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
