"""The sync small op's worker time, piece by piece, in one process on one device.

    python benchmarks/worker_parts.py [--device cuda:0|cpu] [--reps 3000]

``worker_micro.py`` showed that on some hosts ``Executor.run_batch`` costs
several times the library's own op (H100: 115 vs 44 us per
``float((x + 1).sum())``). This splits that batch: the library's launch of
each op and the value read, timed apart; each CUDA call the pacer makes; the
batch's decoding; the whole batch through the Executor with its pacer as built
(policy ``none``) and with the pacer's hooks made empty, taking turns, so the
pacer's share shows; and the part of the batch its client waits for (until the
reply is encoded: the pacer's end of batch runs after the reply is sent).
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
from gpu_backend.protocol import codec  # noqa: E402
from gpu_backend.worker import Executor, HandleTable  # noqa: E402
from gpu_backend.worker.pacing import Pacer  # noqa: E402
from worker_micro import split_sync_op, sync_batches, timeit  # noqa: E402  (beside this file)


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


def cuda_calls_us(device, x, reps):
    """What each CUDA call of the pacer costs here: an event recorded on an idle stream and
    right after a launch, a query of a finished event and of one just recorded, the time
    between two events. Empty on the NumPy device."""
    runtime = getattr(device, "_runtime", None)
    if runtime is None:
        return {}
    stream = device._stream
    a, b = device.marker(), device.marker()
    device.synchronize()
    out = {"record_idle": timeit(lambda: runtime.eventRecord(a.ptr, stream), reps)}

    def record_after_launch():
        x + 1
        t0 = time.perf_counter()
        runtime.eventRecord(a.ptr, stream)
        return time.perf_counter() - t0

    out["record_after_launch"] = statistics.median(record_after_launch() for _ in range(reps)) * 1e6
    device.synchronize()
    out["query_done"] = timeit(lambda: runtime.eventQuery(a.ptr), reps)

    def query_fresh():
        runtime.eventRecord(b.ptr, stream)
        t0 = time.perf_counter()
        runtime.eventQuery(b.ptr)
        return time.perf_counter() - t0

    out["query_just_recorded"] = statistics.median(query_fresh() for _ in range(reps)) * 1e6
    device.synchronize()
    out["elapsed"] = timeit(lambda: runtime.eventElapsedTime(a.ptr, b.ptr), reps)
    return out


def pacer_pieces_us(device, x, reps):
    """Each pacer hook of a batch (policy ``none``) around the library's own sync op."""
    pacer = Pacer(device)
    parts: dict = {"begin_batch": [], "start_segment": [], "end_batch": [], "harvest": []}
    never = lambda: False  # noqa: E731
    for i in range(reps + 200):
        t0 = time.perf_counter()
        pacer.begin_batch(never)
        t1 = time.perf_counter()
        if pacer.fresh_due:
            pacer.start_segment()
        t2 = time.perf_counter()
        float((x + 1).sum())
        t3 = time.perf_counter()
        pacer.end_batch(3, never)
        t4 = time.perf_counter()
        pacer.harvest()
        t5 = time.perf_counter()
        if i >= 200:
            for name, span in (("begin_batch", t1 - t0), ("start_segment", t2 - t1),
                               ("end_batch", t4 - t3), ("harvest", t5 - t4)):
                parts[name].append(span)
    return {k: statistics.median(v) * 1e6 for k, v in parts.items()}


def alternate(cases: dict, reps: int, rounds: int = 4) -> dict:
    """Median microseconds per call of each case, the cases taking turns in *rounds* blocks
    (a host's drift over the run then touches every case alike)."""
    times: dict = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            for _ in range(50):
                fn()
            for _ in range(reps // rounds):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) * 1e6 for name, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--reps", type=int, default=3000)
    parser.add_argument("--profile", action="store_true",
                        help="also: a cProfile of the batches through the Executor (top 25)")
    args = parser.parse_args()
    device = open_device(args.device)
    xp = device.cupy if device.kind == "cupy" else __import__("numpy")
    x = xp.arange(1024, dtype=xp.float32)
    out = {"device": device.info().get("name"), "reps": args.reps}
    out["library_us"] = timeit(lambda: float((x + 1).sum()), args.reps)
    out["library_split_us"] = split_sync_op(x, args.reps)
    out["cuda_calls_us"] = cuda_calls_us(device, x, args.reps)
    out["pacer_hooks_us"] = pacer_pieces_us(device, x, args.reps)

    def marker():
        device.drop_marker(device.marker()) if hasattr(device, "drop_marker") else device.marker()

    out["marker_us"] = timeit(marker, args.reps)

    table = HandleTable(device)
    paced = Executor(device, table)
    unpaced = Executor(device, table)
    unpaced.pacer = _NoPacing(device)
    device.set_memory_limit(8 << 30)
    table.put(1, x)
    bodies = sync_batches(5 * (args.reps + 600) + 10)
    feed = iter(bodies)

    def decode_only():
        paced.open_batch(bodies[0])   # the header; ops are decoded as they run

    def until_reply(executor):
        hdr, ops = executor.open_batch(next(feed))
        reply, _ = executor.run_batch(hdr, ops, [])
        codec.packb(reply)
        return executor

    out["decode_us"] = timeit(decode_only, args.reps)
    split = alternate({
        "reply": lambda: until_reply(paced).after_reply(),
        "reply_no_pacing": lambda: until_reply(unpaced).after_reply(),
    }, args.reps)
    out["executor_us"] = split["reply"]
    out["executor_no_pacing_us"] = split["reply_no_pacing"]
    out["pacer_us"] = out["executor_us"] - out["executor_no_pacing_us"]
    # the part the client waits for: until the reply is encoded (after_reply() and the next
    # batch's harvest happen while the worker would wait for the client)
    times = []
    for i in range(args.reps + 200):
        t0 = time.perf_counter()
        executor = until_reply(paced)
        t1 = time.perf_counter()
        executor.after_reply()
        paced.pacer.harvest()
        if i >= 200:
            times.append(t1 - t0)
    out["reply_path_us"] = statistics.median(times) * 1e6

    if args.profile:
        import cProfile
        import pstats
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.reps):
            until_reply(paced).after_reply()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)

    split = out["library_split_us"]
    print(f"device: {out['device']}")
    rows = [("library float((x + 1).sum())", out["library_us"]),
            ("  x + 1 (launch)", split["add"]), ("  .sum() (launch)", split["sum"]),
            ("  float() (wait + read)", split["float"])]
    rows += [(f"cuda {name}", value) for name, value in out["cuda_calls_us"].items()]
    rows += [(f"pacer {name}", value) for name, value in out["pacer_hooks_us"].items()]
    rows += [("a CUDA event marker", out["marker_us"]), ("batch header decoding", out["decode_us"]),
             ("through Executor, whole batch", out["executor_us"]),
             ("  pacer hooks empty", out["executor_no_pacing_us"]),
             ("  so the pacer costs", out["pacer_us"]),
             ("until the reply is ready (client waits)", out["reply_path_us"])]
    for label, value in rows:
        print(f"{label:40} {value:8.1f} us")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
