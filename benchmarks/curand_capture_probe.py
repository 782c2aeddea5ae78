"""Does a cuRAND draw captured in a CUDA graph, by cuRAND's own call on CuPy's generator,
give the numbers CuPy's eager draws give, launch after launch?

    python benchmarks/curand_capture_probe.py [--launches 5] [--reps 2000] [--json out.json]
    python benchmarks/curand_capture_probe.py --generator-api [--launches 5] [--json out.json]
    python benchmarks/curand_capture_probe.py --sizes [--launches 5] [--json out.json]

Why: a loop that draws (the random walk, the Monte Carlo programs) runs its draws eagerly
between a replay's graphs, at CuPy's cost per call, because CuPy refuses cuRAND under capture
(``cupy_backends/cuda/libs/curand.pyx``'s ``setStream``) and a captured draw was assumed to
replay the same numbers. That holds where the generator's position is a kernel argument the
host advances (Philox, MRG32k3a: their offset); it need not where the generator keeps its
states in device memory and the kernel moves them (XORWOW, CuPy's default). This measures it.

For each generator type and case (uniform and normal, float32 and float64, even and odd
sizes, sizes that do not fill the generator's threads): generator A draws eagerly through
CuPy ``1 + launches + 1`` times; generator B, seeded alike, draws once eagerly (its states
made), then ``curandSetStream`` and the generate call are captured on a stream of their own
through ctypes, the graph launched ``launches`` times (each launch's array copied out), then
B draws once more eagerly through CuPy. Each launch is compared bit for bit with A's draw at
its place, and B's last eager draw with A's last. Then the host's cost of CuPy's eager draw
against a graph launch (the median of --reps calls). Needs a GPU. Prints a table, then one
JSON object.

``--generator-api``: the same question for CuPy's ``Generator`` (``default_rng``), whose
kernels take the bit generator's states as a device array and move them there
(``cupy/random/_generator_api.pyx``'s ``_launch_dist``): CuPy's own call captured on a stream
(no library refuses it), the graph launched, each launch against an eager twin's next draw.

``--sizes``: cuRAND's XORWOW and Philox, uniform and normal float64 draws, at sizes from 2^14
to 2^22 (run 161 found 2^20 launched bitwise where 12 290 did not): is there a size from which
the host's position no longer matters?
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402

#: (name, CuPy's RandomState method and its arguments, cuRAND function, its extra arguments,
#:  dtype, the count cuRAND is asked for)
CASES = [
    ("uniform f4 1000", "random_sample", "curandGenerateUniform", (), "f4", 1000),
    ("uniform f8 1000", "random_sample", "curandGenerateUniformDouble", (), "f8", 1000),
    ("uniform f8 12290", "random_sample", "curandGenerateUniformDouble", (), "f8", 12290),
    ("uniform f8 1M", "random_sample", "curandGenerateUniformDouble", (), "f8", 1 << 20),
    ("uniform f8 10", "random_sample", "curandGenerateUniformDouble", (), "f8", 10),
    ("normal f4 1000", "standard_normal", "curandGenerateNormal", (0.0, 1.0), "f4", 1000),
    ("normal f8 1000", "standard_normal", "curandGenerateNormalDouble", (0.0, 1.0), "f8", 1000),
    ("normal f8 12290", "standard_normal", "curandGenerateNormalDouble", (0.0, 1.0), "f8", 12290),
    ("normal f8 4097 (odd: 4098 asked)", "standard_normal", "curandGenerateNormalDouble",
     (0.0, 1.0), "f8", 4097),
    ("normal f8 1M", "standard_normal", "curandGenerateNormalDouble", (0.0, 1.0), "f8", 1 << 20),
    ("lognormal f8 2000", "lognormal", "curandGenerateLogNormalDouble", (0.0, 1.0), "f8", 2000),
]

GENERATORS = [("XORWOW (CuPy's default)", 100), ("PHILOX4_32_10", 161), ("MRG32K3A", 121)]


def _library():
    """cuRAND as CuPy loaded it, from this process's maps."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rstrip("\n").partition("/")[2]
            if path and os.path.basename(path).startswith("libcurand.so"):
                lib = ctypes.CDLL("/" + path)
                lib.curandSetStream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
                return lib
    raise RuntimeError("cuRAND is not loaded")


def _call(lib, name, generator, ptr, count, extra, dtype):
    fn = getattr(lib, name)
    args = [ctypes.c_void_p(generator), ctypes.c_void_p(ptr), ctypes.c_size_t(count)]
    scalar = ctypes.c_float if dtype == "f4" else ctypes.c_double
    args += [scalar(v) for v in extra]
    return fn(*args)


def _eager(cp, rs, method, dtype, count):
    """CuPy's own draw, with what cuRAND wrote (``_generate_normal``'s even count)."""
    if method == "random_sample":
        return rs._random_sample_raw((count,), dtype)
    n = count + (count % 2)
    out = cp.empty((n,), dtype=dtype)
    fn = {("standard_normal", "f4"): cp.cuda.curand.generateNormal,
          ("standard_normal", "f8"): cp.cuda.curand.generateNormalDouble,
          ("lognormal", "f4"): cp.cuda.curand.generateLogNormal,
          ("lognormal", "f8"): cp.cuda.curand.generateLogNormalDouble}[(method, dtype)]
    fn(rs._generator, out.data.ptr, n, 0.0, 1.0)
    return out


def _captured(stream, make):
    """*make()* captured on *stream*: (the graph, what *make* returned)."""
    with stream:
        stream.begin_capture()
        try:
            made = make()
        finally:
            graph = stream.end_capture()
    return graph, made


def _launches_equal(graph, stream, out, wanted):
    """*graph* launched once for each of *wanted*, *out* compared with it after each."""
    equal = []
    for want in wanted:
        graph.launch(stream)
        stream.synchronize()
        equal.append(bool(np.array_equal(out.get(), want)))
    return equal


def _case(cp, lib, kind, case, launches):
    name, method, fn, extra, dtype, count = case
    n = count + (count % 2) if method != "random_sample" else count
    a = cp.random.RandomState(1234, method=kind)
    want = [_eager(cp, a, method, dtype, count).get() for _ in range(launches + 2)]
    b = cp.random.RandomState(1234, method=kind)
    first = _eager(cp, b, method, dtype, count).get()
    row = {"generator": kind, "case": name, "first": bool(np.array_equal(first, want[0]))}
    out = cp.empty((n,), dtype=dtype)
    stream = cp.cuda.Stream(non_blocking=True)

    def generate():
        lib.curandSetStream(ctypes.c_void_p(b._generator), ctypes.c_void_p(stream.ptr))
        return _call(lib, fn, b._generator, out.data.ptr, n, extra, dtype)
    try:
        graph, status = _captured(stream, generate)
        row["capture_status"] = int(status)
    except Exception as exc:   # (what capture refuses is the probe's answer)
        row["capture_error"] = f"{type(exc).__name__}: {exc}"
        return row
    if status != 0:
        return row
    equal = row["launches_equal"] = _launches_equal(graph, stream, out, want[1:launches + 1])
    last = _eager(cp, b, method, dtype, count).get()
    row["eager_after"] = bool(np.array_equal(last, want[launches + 1]))
    if not all(equal):
        row["launch_equals_first_capture"] = bool(np.array_equal(out.get(), want[1]))
    return row


#: the sizes ``--sizes`` tries: where does a launch after the first stay bitwise?
SIZES = [1 << 14, 1 << 16, 1 << 18, 500_000, (1 << 19) + 2, 1 << 19, 1_000_000, 1 << 20,
         (1 << 20) + 2, 1_500_000, 1 << 21, 3_000_000, 1 << 22]


def _sizes(cp, lib, launches, path):
    """XORWOW and Philox, uniform and normal float64, at each of SIZES."""
    rows = []
    print(f"{'generator':<26} {'draw':<10} {'size':>9}  launches equal                      after")
    for label, kind in GENERATORS[:2]:
        for draw, fn, method, extra in (("uniform", "curandGenerateUniformDouble", "random_sample", ()),
                                        ("normal", "curandGenerateNormalDouble", "standard_normal",
                                         (0.0, 1.0))):
            for n in SIZES:
                row = _case(cp, lib, kind, (f"{draw} f8 {n}", method, fn, extra, "f8", n), launches)
                row.update(generator=label, draw=draw, size=n)
                rows.append(row)
                print(f"{label:<26} {draw:<10} {n:>9}  {str(row.get('launches_equal', '-')):<35} "
                      f"{row.get('eager_after', '-')}")
    emit({"benchmark": "curand_capture_probe", "mode": "sizes",
          "date": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, path)
    return 0


def _costs(cp, lib, reps):
    """µs of the host: CuPy's eager 1 000-element f8 normal draw; a graph launch of it."""
    rs = cp.random.RandomState(7)
    rs.standard_normal(1000)
    stream = cp.cuda.Stream(non_blocking=True)
    out = cp.empty((1000,), dtype="f8")

    def generate():
        lib.curandSetStream(ctypes.c_void_p(rs._generator), ctypes.c_void_p(stream.ptr))
        _call(lib, "curandGenerateNormalDouble", rs._generator, out.data.ptr, 1000, (0.0, 1.0), "f8")
    graph, _ = _captured(stream, generate)
    timings = {"eager": [], "launch": []}
    with stream:
        for _ in range(3):
            for key in timings:
                for i in range(reps // 3):
                    t = time.perf_counter()
                    if key == "eager":
                        rs.standard_normal(1000)
                    else:
                        graph.launch(stream)
                    timings[key].append(time.perf_counter() - t)
                    if i % 100 == 99:
                        stream.synchronize()
                stream.synchronize()
    return {k: statistics.median(v) * 1e6 for k, v in timings.items()}


#: (name, the Generator's method, its arguments)
GENERATOR_CASES = [
    ("random 1000", "random", (1000,), {}),
    ("random f4 4097", "random", (4097,), {"dtype": "float32"}),
    ("random 1M", "random", (1 << 20,), {}),
    ("standard_normal 1000", "standard_normal", (1000,), {}),
    ("standard_normal f4 777", "standard_normal", (777,), {"dtype": "float32"}),
    ("standard_normal 1M", "standard_normal", (1 << 20,), {}),
    ("uniform -1..1 12290", "uniform", (-1.0, 1.0, 12290), {}),
    ("integers 0..100 5000", "integers", (0, 100, 5000), {}),
    ("exponential 3000", "standard_exponential", (3000,), {}),
    ("gamma(2.5) 2000", "standard_gamma", (2.5, 2000), {}),
]


def _generator_case(cp, case, launches):
    name, method, args, kwargs = case
    a = cp.random.default_rng(99)
    want = [getattr(a, method)(*args, **kwargs).get() for _ in range(launches + 2)]
    b = cp.random.default_rng(99)
    first = getattr(b, method)(*args, **kwargs).get()
    row = {"generator": "Generator (default_rng)", "case": name,
           "first": bool(np.array_equal(first, want[0]))}
    stream = cp.cuda.Stream(non_blocking=True)
    try:
        graph, out = _captured(stream, lambda: getattr(b, method)(*args, **kwargs))
    except Exception as exc:   # (what capture refuses is the probe's answer)
        row["capture_error"] = f"{type(exc).__name__}: {exc}"
        return row
    row["launches_equal"] = _launches_equal(graph, stream, out, want[1:launches + 1])
    row["eager_after"] = bool(np.array_equal(getattr(b, method)(*args, **kwargs).get(),
                                             want[launches + 1]))
    return row


def _generator_api(cp, launches, path):
    rows = []
    print(f"{'case':<28} first  launches equal                    after  note")
    for case in GENERATOR_CASES:
        row = _generator_case(cp, case, launches)
        rows.append(row)
        print(f"{row['case']:<28} {str(row['first']):<6} {str(row.get('launches_equal', '-')):<32} "
              f"{str(row.get('eager_after', '-')):<6} {row.get('capture_error', '')}")
    emit({"benchmark": "curand_capture_probe", "mode": "generator-api",
          "date": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, path)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json", default=None)
    parser.add_argument("--generator-api", action="store_true",
                        help="CuPy's Generator (default_rng) captured instead of cuRAND's calls")
    parser.add_argument("--sizes", action="store_true",
                        help="cuRAND's XORWOW and Philox at sizes from 2^14 to 2^22")
    args = parser.parse_args()
    import cupy as cp
    if args.generator_api:
        return _generator_api(cp, args.launches, args.json)
    cp.random.RandomState(1).random_sample(2)   # (loads cuRAND)
    lib = _library()
    if args.sizes:
        return _sizes(cp, lib, args.launches, args.json)
    rows = []
    print(f"{'generator':<26} {'case':<34} first  launches equal       after  note")
    for label, kind in GENERATORS:
        for case in CASES:
            row = _case(cp, lib, kind, case, args.launches)
            row["generator"] = label
            rows.append(row)
            note = row.get("capture_error", "")
            if "launches_equal" in row and not all(row["launches_equal"]):
                note = f"launch = first captured draw: {row['launch_equals_first_capture']}"
            print(f"{label:<26} {row['case']:<34} {str(row['first']):<6} "
                  f"{str(row.get('launches_equal', '-')):<19} {str(row.get('eager_after', '-')):<6} {note}")
    costs = _costs(cp, lib, args.reps)
    print(f"host µs a call: CuPy's eager 1 000 normal f8 draw {costs['eager']:.1f}, "
          f"its captured graph's launch {costs['launch']:.1f}")
    emit({"benchmark": "curand_capture_probe", "date": datetime.now(timezone.utc).isoformat(),
          "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
          "rows": rows, "host_us": costs}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
