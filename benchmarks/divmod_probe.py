"""Is CuPy's ``divmod`` the pair ``floor_divide``, ``remainder`` to the bit, on this GPU?

    python benchmarks/divmod_probe.py [--json out.json]

The client issues a ``divmod`` of known real dtypes as those two ops (kernelproxy/issue.py,
``_divmod_as_two``), ops of one result that held stretches keep. CuPy's ``divmod`` kernel
computes ``a = _floor_divide(in0, in1); out1 = in0 - a * in1`` for floats (0 and 0 for an
integer divisor of 0), its ``remainder`` ``in0 - _floor_divide(in0, in1) * in1`` (times
``in1 != 0`` for integers): the same expressions, compiled apart, so the compiler's
contraction of ``in0 - a * in1`` into a fused multiply-add must be the same in both. This
probe compares them bit for bit over random and special values (signed zeros, infinities,
NaN, the integers' extremes), every real dtype ``divmod`` has, arrays by arrays, by Python
and NumPy scalars and reflected, and Python's operators (``x // y``, ``x % y``,
``divmod(x, y)``). Prints a table and a JSON object; exits 1 where any pair differs. On a
host without CuPy it compares NumPy's (equal by construction: NumPy computes both from
``npy_divmod``). Run 309 (H200, CuPy 14.2.0): equal for every integer dtype, float32 and
float64; float16 differs (260-2 886 of 4 109 values), so the client leaves it to the call."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64"]


def _values(xp, dtype: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        base = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 7.0, 1e4], n)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0,
                            np.finfo(dt).max, -np.finfo(dt).max, np.finfo(dt).tiny])
        a = np.concatenate([base, special]).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)
        a = np.concatenate([a, np.array([0, 1, info.max, info.min, info.max - 1], dtype=dt)])
    return xp.asarray(a)


def _same(a, b) -> int:
    """How many elements of *a* and *b* differ by their bits (shape and dtype first)."""
    a, b = (np.asarray(v.get() if hasattr(v, "get") else v) for v in (a, b))
    if a.dtype != b.dtype or a.shape != b.shape:
        return max(a.size, b.size, 1)
    return int(np.count_nonzero(a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)))


def probe(xp) -> list[dict]:
    rows = []
    for dtype in DTYPES:
        x = _values(xp, dtype, 4096, 1)
        y = _values(xp, dtype, 4096, 2)
        dt = np.dtype(dtype)
        y_rolled = xp.roll(x, 7)   # (every special value against every other, in part)
        cases = {"array, array": (x, y), "array, rolled": (x, y_rolled),
                 "array, python scalar": (x, 3 if dt.kind in "iu" else 3.5),
                 "array, numpy scalar": (x, dt.type(3)),
                 "reflected scalar": (7 if dt.kind in "iu" else -7.25, y)}
        if dt.kind == "f":
            cases["array, zero"] = (x, 0.0)
            cases["array, negative zero"] = (x, -0.0)
        for label, (a, b) in cases.items():
            with np.errstate(all="ignore"):
                q, r = xp.divmod(a, b)
                diff = _same(q, xp.floor_divide(a, b)) + _same(r, xp.remainder(a, b))
                if not (isinstance(a, (int, float)) or isinstance(b, (int, float))
                        or np.isscalar(a) or np.isscalar(b)):
                    q2, r2 = divmod(a, b)
                    diff += _same(q2, a // b) + _same(r2, a % b)
            rows.append({"dtype": dtype, "case": label, "differ": diff})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        import cupy as xp
        kind = "cupy " + xp.__version__
    except ImportError:
        xp, kind = np, "numpy " + np.__version__
    rows = probe(xp)
    print(f"{'dtype':10s} {'case':24s} differ")
    for r in rows:
        print(f"{r['dtype']:10s} {r['case']:24s} {r['differ']}")
    bad = [r for r in rows if r["differ"]]
    print(f"{len(rows)} cases on {kind}, {len(bad)} with elements that differ")
    out = {"module": kind, "rows": rows, "differing": len(bad)}
    print(json.dumps(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
