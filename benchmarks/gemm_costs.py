"""What one GEMM of the fairness benchmark costs the device and the host, with plain CuPy.

    python benchmarks/gemm_costs.py [--sizes 1024:float32,2048:float32,6144:float16] [--json out.json]

For each size: the device's time per GEMM (CUDA events around a back-to-back run of
them, the host far ahead), and the host's time to launch one (``a @ b`` returning, the
device kept busy so the queue never drains: the launch cost alone). A GEMM loop whose
launch cost nears its device time is host-bound: the device idles between its GEMMs,
and any per-op cost the proxy or the arbiter adds shows in its rate (fairness.py's
big-vs-small scenario, docs/performance-log.md, runs 27-28).
"""

from __future__ import annotations

import argparse
import statistics
import time

from json_out import emit   # (beside this file)


def measure(cp, n: int, dtype: str, reps: int) -> dict:
    a = cp.random.random((n, n)).astype(dtype)
    b = cp.random.random((n, n)).astype(dtype)
    for _ in range(20):   # cuBLAS loaded, clocks up
        a @ b
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    device = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            a @ b
        end.record()
        end.synchronize()
        device.append(cp.cuda.get_elapsed_time(start, end) / reps)
    # launch cost: a long kernel first, so the launches below never wait for the device
    big = cp.random.random((8192, 8192)).astype("float32")
    launches = []
    for _ in range(5):
        big @ big   # ~20 ms of device work ahead
        t0 = time.perf_counter()
        for _ in range(20):
            a @ b
        launches.append((time.perf_counter() - t0) / 20 * 1e3)
        cp.cuda.Device().synchronize()
    return {"n": n, "dtype": dtype, "device_ms": statistics.median(device),
            "launch_ms": statistics.median(launches)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1024:float32,2048:float32,6144:float16")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args()
    import cupy as cp
    rows = []
    for spec in args.sizes.split(","):
        n, dtype = spec.split(":")
        rows.append(measure(cp, int(n), dtype, args.reps))
    print(f"{'GEMM':>16} {'device ms':>10} {'launch ms':>10} {'launch/device':>14}")
    for r in rows:
        print(f"{r['n']:>7}² {r['dtype']:>8} {r['device_ms']:>10.4f} {r['launch_ms']:>10.4f} "
              f"{r['launch_ms'] / r['device_ms']:>14.2f}")
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
