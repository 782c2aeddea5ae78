"""Is a ``RandomState``'s ``normal(loc, scale, n)`` the standard draw ``normal(0, 1, n)`` of the
same generator, scaled and shifted by one fused multiply-add, bit for bit?

    python benchmarks/normal_affine_probe.py [--json out.json]

Why (issue 50): a loop whose noise scale changes every step (Langevin dynamics with an annealed
step, ``rs.normal(0.0, math.sqrt(2 * eta_t), n)``) is never run ahead usefully: a run ahead
draws with the scale it guessed, a missed guess cannot hand its draw on (the draw took the
scale), and the generator is made again from its journal. cuRAND applies ``mean`` and
``stddev`` inside its kernel; if that is ``fma(z, stddev, mean)`` on the standard draw ``z``
(or the plain ``z * stddev + mean``), a run ahead can draw ``z`` and apply the scale after,
and a missed guess hands ``z`` on. This measures which of the two, if either, cuRAND's draws
are, for float64 and float32, even and odd sizes, several seeds, means and scales.

For each case generator A draws ``normal(loc, scale, n, dtype)``; generator B, seeded alike,
draws ``normal(0.0, 1.0, n, dtype)`` and the two candidates are computed from B's draw by an
elementwise kernel. Each is compared with A's draw bit for bit (and B's next draw with A's
next: the two generators moved alike). On the NumPy device (no GPU) the same question is put to
NumPy's legacy ``RandomState`` (``loc + scale * z``, unfused). Prints a table, then JSON.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402

SIZES = (10, 1001, 12_290, 1_000_000, 1_000_001)
SEEDS = (0, 21, 12345)
AFFINES = ((0.0, 0.316227766), (0.0, 1e-3), (1.5, 0.37), (-2.25, 3.0), (0.1, 0.1 + 1e-4 * 7),
           (1e6, 1e-3))


def cupy_cases(cp) -> list[dict]:
    fused = cp.ElementwiseKernel("T z, T s, T m", "T y", "y = fma(z, s, m)", "gpuwb_probe_fma")
    plain = cp.ElementwiseKernel("T z, T s, T m", "T y", "y = z * s + m", "gpuwb_probe_plain",
                                 options=("--fmad=false",))
    rows = []
    for dtype in (np.float64, np.float32):
        for n in SIZES:
            for seed in SEEDS:
                for loc, scale in AFFINES:
                    a, b = cp.random.RandomState(seed), cp.random.RandomState(seed)
                    want = a.normal(loc, scale, n, dtype)
                    z = b.normal(0.0, 1.0, n, dtype)
                    s, m = dtype(scale), dtype(loc)
                    got_fma = fused(z, s, m)
                    got_plain = plain(z, s, m)
                    rows.append({
                        "dtype": np.dtype(dtype).name, "n": n, "seed": seed, "loc": loc, "scale": scale,
                        "fma": bool(cp.array_equal(want.view(_uint(dtype)), got_fma.view(_uint(dtype)))),
                        "plain": bool(cp.array_equal(want.view(_uint(dtype)), got_plain.view(_uint(dtype)))),
                        "next_equal": bool(cp.array_equal(a.normal(0.0, 1.0, 16, dtype),
                                                          b.normal(0.0, 1.0, 16, dtype))),
                    })
    return rows


def numpy_cases() -> list[dict]:
    rows = []
    for dtype in (np.float64, np.float32):
        for n in SIZES:
            for seed in SEEDS:
                for loc, scale in AFFINES:
                    a, b = np.random.RandomState(seed), np.random.RandomState(seed)
                    want = a.normal(loc, scale, n).astype(dtype)
                    z = b.normal(0.0, 1.0, n)
                    got_plain = (loc + scale * z).astype(dtype)
                    rows.append({
                        "dtype": np.dtype(dtype).name, "n": n, "seed": seed, "loc": loc, "scale": scale,
                        "fma": None, "plain": bool(np.array_equal(want.view(_uint(dtype)),
                                                                  got_plain.view(_uint(dtype)))),
                        "next_equal": bool(np.array_equal(a.normal(0.0, 1.0, 16), b.normal(0.0, 1.0, 16))),
                    })
    return rows


def _uint(dtype) -> type:
    return np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception:   # (no GPU here: NumPy's legacy generator)
        cp = None
    rows = cupy_cases(cp) if cp is not None else numpy_cases()
    print(f"{'dtype':8} {'cases':>6} {'fma equal':>10} {'plain equal':>12} {'moved alike':>12}")
    summary = {}
    for dtype in ("float64", "float32"):
        mine = [r for r in rows if r["dtype"] == dtype]
        fma = sum(1 for r in mine if r["fma"])
        plain = sum(1 for r in mine if r["plain"])
        alike = sum(1 for r in mine if r["next_equal"])
        summary[dtype] = {"cases": len(mine), "fma_equal": fma, "plain_equal": plain, "moved_alike": alike}
        print(f"{dtype:8} {len(mine):6d} {fma:10d} {plain:12d} {alike:12d}")
    misses = [r for r in rows if r["fma"] is False and r["plain"] is False][:12]
    for r in misses:
        print("neither equal:", r)
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python " + " ".join([os.path.relpath(__file__)] + sys.argv[1:]),
          "device": "cupy" if cp is not None else "numpy", "summary": summary, "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
