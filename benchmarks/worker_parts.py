"""The sync small op's worker time, piece by piece, in one process on one device.

    python benchmarks/worker_parts.py [--device cuda:0|cpu] [--reps 3000]

``worker_micro.py`` showed that on some hosts ``Executor.run_batch`` costs
several times the library's own op (H100: 115 vs 44 us per
``float((x + 1).sum())``). This splits that batch: the library's launch of
each op and the value read, timed apart; a CUDA event marker; the batch's
decoding; and the batch through the Executor with its pacer as built (policy
``none``) and with the pacer's hooks made empty, so the pacer's share shows.
Medians in microseconds; a table, then JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_backend.devices import open_device  # noqa: E402
from gpu_backend.worker import Executor, HandleTable  # noqa: E402
from gpu_backend.worker.pacing import Pacer  # noqa: E402
from worker_micro import run_batch, sync_batches, timeit  # noqa: E402  (beside this file)


class _NoPacing(Pacer):
    """The pacer's hooks doing nothing (to measure what they cost; never used in a pool)."""

    def begin_batch(self, interrupted):
        return True

    def end_batch(self, executed, more_work):
        return None

    def after_ops(self, executed, interrupted):
        return 1 << 30

    def start_segment(self):
        return None


def split_us(x, reps):
    """(x + 1), .sum() and float() of one iteration, each timed on its own."""
    add, total, read = [], [], []
    for i in range(reps + 200):
        t0 = time.perf_counter()
        y = x + 1
        t1 = time.perf_counter()
        z = y.sum()
        t2 = time.perf_counter()
        float(z)
        t3 = time.perf_counter()
        if i >= 200:
            add.append(t1 - t0)
            total.append(t2 - t1)
            read.append(t3 - t2)
    return {k: statistics.median(v) * 1e6 for k, v in (("add", add), ("sum", total), ("float", read))}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--reps", type=int, default=3000)
    args = parser.parse_args()
    device = open_device(args.device)
    xp = device.cupy if device.kind == "cupy" else __import__("numpy")
    x = xp.arange(1024, dtype=xp.float32)
    out = {"device": device.info().get("name"), "reps": args.reps}
    out["library_us"] = timeit(lambda: float((x + 1).sum()), args.reps)
    out["library_split_us"] = split_us(x, args.reps)

    def marker():
        device.drop_marker(device.marker()) if hasattr(device, "drop_marker") else device.marker()

    out["marker_us"] = timeit(marker, args.reps)

    table = HandleTable(device)
    executor = Executor(device, table)
    device.set_memory_limit(8 << 30)
    table.put(1, x)
    bodies = sync_batches(3 * (args.reps + 200) + 10)
    feed = iter(bodies)

    def decode_only():
        executor.open_batch(bodies[0])   # the header; ops are decoded as they run

    def batch():
        run_batch(executor, next(feed))

    out["decode_us"] = timeit(decode_only, args.reps)
    out["executor_us"] = timeit(batch, args.reps)
    executor.pacer = _NoPacing(device)
    out["executor_no_pacing_us"] = timeit(batch, args.reps)
    out["pacer_us"] = out["executor_us"] - out["executor_no_pacing_us"]

    split = out["library_split_us"]
    print(f"device: {out['device']}")
    for label, value in (("library float((x + 1).sum())", out["library_us"]),
                         ("  x + 1 (launch)", split["add"]), ("  .sum() (launch)", split["sum"]),
                         ("  float() (wait + read)", split["float"]),
                         ("a CUDA event marker", out["marker_us"]), ("batch header decoding", out["decode_us"]),
                         ("through Executor", out["executor_us"]),
                         ("through Executor, pacer hooks empty", out["executor_no_pacing_us"]),
                         ("  so the pacer costs", out["pacer_us"])):
        print(f"{label:38} {value:8.1f} us")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
