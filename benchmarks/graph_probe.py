"""Can a session worker replay a stretch of CuPy ops as a CUDA graph, and what does it cost?

    python benchmarks/graph_probe.py [--reps 2000] [--json out.json]      (a GPU with CuPy)

Issue 37's design question, measured with plain CuPy in one process (no pool): the
worker would capture a repeated stretch once, with buffers it owns, then on each repeat
copy the client's inputs in, launch the graph and hand the outputs out as new arrays.
For each stretch this prints the wall time per iteration of

* ``eager``: the ops as CuPy runs them (what a local user pays, and today's worker),
* ``graph``: copy-in of each input (D2D ``memcpyAsync``), one graph launch, copy-out of each
  output into a freshly allocated array, and the sync the stretch ends with,
* ``graph-pingpong``: the loop-carried input is the last replay's output (two graphs over
  two buffer sets, no copies),

whether the graph's results are bitwise equal to eager ones, and which ops refuse to be
captured (cuBLAS, random draws, syncs, data-dependent shapes) with the error they raise.
Also: whether a Python scalar argument baked into a captured kernel can be replaced by a
0-d device array of the weak scalar's dtype with bitwise-equal results (the way a scalar
that changes each iteration, CG's alpha, would not defeat replay).

Prints a table, then one JSON object (also written to --json).
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


def _timed(fn, reps: int) -> float:
    """Median of 5 rounds of the mean microseconds per call over reps // 5 calls."""
    rounds = []
    per = max(1, reps // 5)
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(per):
            fn()
        rounds.append((time.perf_counter() - start) / per * 1e6)
    return statistics.median(rounds)


class Captured:
    """One stretch captured as a graph over buffers of its own (a private memory pool, so
    no block the graph writes is ever handed to another array)."""

    def __init__(self, cp, body, inputs):
        self.cp = cp
        self.pool = cp.cuda.MemoryPool()
        self.stream = cp.cuda.Stream(non_blocking=True)
        with cp.cuda.using_allocator(self.pool.malloc), self.stream:
            self.ins = [cp.empty_like(a) for a in inputs]
            for buf, a in zip(self.ins, inputs):
                buf[...] = a
            body(*self.ins)   # warm up: kernels compiled, the pool holds the blocks
            self.stream.synchronize()
            self.stream.begin_capture()
            try:
                outs = body(*self.ins)
            finally:
                self.graph = self.stream.end_capture()
        self.outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]

    def run(self, inputs, copy_out=True):
        cp = self.cp
        s = self.stream
        for buf, a in zip(self.ins, inputs):
            cp.cuda.runtime.memcpyAsync(buf.data.ptr, a.data.ptr, a.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice, s.ptr)
        self.graph.launch(s)
        if not copy_out:
            return self.outs
        fresh = []
        for o in self.outs:
            new = cp.empty_like(o)
            cp.cuda.runtime.memcpyAsync(new.data.ptr, o.data.ptr, o.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice, s.ptr)
            fresh.append(new)
        return fresh


# ------------------------------------------------------------------ stretches
def hot_sync(cp):
    x = cp.arange(1000, dtype=cp.float32)

    def body(x):
        return (x + 1).sum()
    return body, [x], "float((x + 1).sum()), 1000 float32"


def stencil(cp):
    u = cp.random.default_rng(1).random((512, 512), dtype=cp.float32)

    def body(u):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        new = u.copy()
        new[1:-1, 1:-1] += 0.1 * lap
        return new
    return body, [u], "5-point stencil step on 512x512 float32 (9 ops)"


def elementwise_chain(cp):
    x = cp.random.default_rng(2).random(1 << 20, dtype=cp.float32)

    def body(x):
        y = cp.sin(x) * 0.5 + 0.25
        y = cp.exp(-y * y)
        return y / (1 + y)
    return body, [x], "8 elementwise ops on 1 M float32"


STRETCHES = {"hot_sync": hot_sync, "stencil": stencil, "elementwise": elementwise_chain}


def probe_stretch(cp, name, reps):
    body, inputs, what = STRETCHES[name](cp)
    stream = cp.cuda.Stream(non_blocking=True)
    row = {"stretch": name, "what": what}
    ends_in_scalar = name == "hot_sync"

    def eager():
        with stream:
            out = body(*inputs)
            if ends_in_scalar:
                float(out)
            else:
                stream.synchronize()
    row["eager_us"] = _timed(eager, reps)
    try:
        cap = Captured(cp, body, inputs)
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row

    def graph():
        outs = cap.run(inputs)
        if ends_in_scalar:
            float(outs[0])
        else:
            cap.stream.synchronize()
    row["graph_us"] = _timed(graph, reps)

    def pingpong():
        outs = cap.run(inputs, copy_out=False)
        if ends_in_scalar:
            float(outs[0])
        else:
            cap.stream.synchronize()
    row["graph_no_copies_us"] = _timed(pingpong, reps)
    with stream:
        want = body(*inputs)
        stream.synchronize()
    got = cap.run(inputs)[0]
    cap.stream.synchronize()
    row["bitwise_equal"] = bool(cp.array_equal(want.view(cp.uint8) if want.ndim else want.reshape(1).view(cp.uint8),
                                               got.view(cp.uint8) if got.ndim else got.reshape(1).view(cp.uint8)))
    row["graph_pool_bytes"] = cap.pool.total_bytes()
    row["speedup"] = row["eager_us"] / row["graph_us"]
    return row


# ------------------------------------------------------------------ what refuses capture
def refusals(cp):
    a = cp.random.default_rng(3).random((256, 256), dtype=cp.float32)
    v = cp.arange(1000, dtype=cp.float32)
    cases = {
        "matmul (cuBLAS)": lambda: a @ a,
        "sum (reduction)": lambda: v.sum(),
        "cumsum (CUB scan)": lambda: cp.cumsum(v),
        "random.standard_normal": lambda: cp.random.standard_normal(1000, dtype=cp.float32),
        "boolean mask v[v > 5]": lambda: v[v > 5],
        "nonzero": lambda: cp.nonzero(v > 5),
        "float(v.sum()) (a sync)": lambda: float(v.sum()),
        "argmax": lambda: cp.argmax(v),
        "sort": lambda: cp.sort(v),
        "fft.fft (cuFFT)": lambda: cp.fft.fft(v),
        "linalg.solve (cuSOLVER)": lambda: cp.linalg.solve(a + 256 * cp.eye(256, dtype=cp.float32), v[:256]),
    }
    out = {}
    for label, fn in cases.items():
        pool = cp.cuda.MemoryPool()
        s = cp.cuda.Stream(non_blocking=True)
        with cp.cuda.using_allocator(pool.malloc), s:
            try:
                fn()   # warm-up outside capture: plans, handles, kernels
                s.synchronize()
                s.begin_capture()
                try:
                    fn()
                finally:
                    g = s.end_capture()
                g.launch(s)
                s.synchronize()
                out[label] = "captured"
            except Exception as exc:
                out[label] = f"refused: {type(exc).__name__}: {str(exc)[:120]}"
        try:
            cp.cuda.Device().synchronize()
        except Exception as exc:   # a capture failure may poison the context
            out[label] += f" (device after: {type(exc).__name__})"
    return out


def scalar_as_device_array(cp):
    """``x * alpha + beta`` with Python scalars, against the same with 0-d device arrays of
    the dtype each weak scalar takes (NEP 50: ``numpy.result_type(x.dtype, alpha)``): if
    equal bit for bit, a scalar that changes each iteration can live in a buffer the graph
    reads, and replay need not be captured again for each value."""
    import numpy as np

    res = {}
    for dt in ("float32", "float64", "complex64", "int32", "float16"):
        x = (cp.random.default_rng(4).random(1 << 16) * 100).astype(dt)
        for alpha in (0.1, 1 / 3, 2.5e-7, 3):
            beta = 1 - alpha
            want = x * alpha + beta
            a_dev = cp.asarray(alpha, dtype=np.result_type(x.dtype, alpha))
            b_dev = cp.asarray(beta, dtype=np.result_type(want.dtype, beta))
            got = x * a_dev + b_dev
            res[f"{dt} alpha={alpha:g}"] = bool(want.dtype == got.dtype and
                                                 cp.array_equal(want.view(cp.uint8), got.view(cp.uint8)))
    return res


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        print(f"graph_probe needs CuPy and a GPU: {exc}", file=sys.stderr)
        return 2
    rows = [probe_stretch(cp, name, args.reps) for name in STRETCHES]
    print(f"{'stretch':12} {'eager us':>9} {'graph us':>9} {'no copies':>9} {'speedup':>8} {'bitwise':>8}  what")
    for r in rows:
        if "error" in r:
            print(f"{r['stretch']:12} {r['eager_us']:9.1f} capture failed: {r['error']}")
            continue
        print(f"{r['stretch']:12} {r['eager_us']:9.1f} {r['graph_us']:9.1f} {r['graph_no_copies_us']:9.1f} "
              f"{r['speedup']:8.2f} {str(r['bitwise_equal']):>8}  {r['what']}")
    refused = refusals(cp)
    print("\ncapture of single ops (warmed up first):")
    for label, verdict in refused.items():
        print(f"  {label:28} {verdict}")
    scalars = scalar_as_device_array(cp)
    print("\nPython scalar vs 0-d device array of the weak scalar's dtype, bitwise equal:")
    for label, same in scalars.items():
        print(f"  {label:28} {same}")
    props = cp.cuda.runtime.getDeviceProperties(0)
    emit({"benchmark": "graph_probe", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
          "cupy": cp.__version__, "command": " ".join([sys.executable, *sys.argv]),
          "stretches": rows, "capture": refused, "scalar_as_device_array": scalars}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
