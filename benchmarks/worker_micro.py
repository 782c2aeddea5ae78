"""Where does a session worker's time go? ``float((x + 1).sum())`` four ways, one process.

    python benchmarks/worker_micro.py [--device cuda:0|cpu]

1. the array library alone; 2. with the worker's memory-pool limit and warning
hooks; 3. through ``Executor.run_batch`` on pre-encoded batches (decode, run,
metadata, reply encoding; no sockets); 4. the same with a second process's
CUDA context alive on the GPU. Prints microseconds per iteration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpu_backend.devices import open_device  # noqa: E402
from gpu_backend.protocol import codec  # noqa: E402
from gpu_backend.worker import Executor, HandleTable  # noqa: E402


def timeit(fn, reps=3000):
    for _ in range(200):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def split_sync_op(x, reps: int, session=None) -> dict:
    """``float((x + 1).sum())`` in its parts, each timed on its own: ``x + 1``, ``.sum()`` and
    the ``float()`` (medians in microseconds, after 200 warm-up rounds). With a proxy
    *session* the first two only queue ops and the ``float()`` sends the batch and waits;
    the worker's own time for the batch (``worker``) is then split off the wait too."""
    parts: dict = {"add": [], "sum": [], "float": []}
    if session is not None:
        parts["worker"] = []
    for i in range(reps + 200):
        t0 = time.perf_counter()
        y = x + 1
        t1 = time.perf_counter()
        z = y.sum()
        t2 = time.perf_counter()
        before = session.worker_seconds if session is not None else 0.0
        float(z)
        t3 = time.perf_counter()
        if i >= 200:
            parts["add"].append(t1 - t0)
            parts["sum"].append(t2 - t1)
            parts["float"].append(t3 - t2)
            if session is not None:
                parts["worker"].append(session.worker_seconds - before)
    out = {k: statistics.median(v) * 1e6 for k, v in parts.items()}
    if session is not None:
        out["float_minus_worker"] = out["float"] - out["worker"]
    return out


def sync_batches(count: int) -> list[bytes]:
    """*count* batches of ``float((x + 1).sum())`` on handle 1, encoded ahead (so that only
    the worker's side is timed), each freeing the previous one's arrays."""
    pack = codec.make_packer().pack
    H = codec.Handle
    header = codec.packb({"k": b"", "b": 1, "n": 3, "r": None})
    bodies = []
    for i in range(count):
        s, h = 3 * i, 10 + 2 * i
        bodies.append(b"".join([header, pack([s + 1, "o", "a", h, "add"]), pack([None, [H(1), 1], {}]),
                                pack([s + 2, "m", "a", h + 1, "sum"]), pack([H(h), [], {}]),
                                pack([s + 3, "o", "v", None, "float"]), pack([None, [H(h + 1)], {}]),
                                pack(h), pack(h + 1)]))
    return bodies


def run_batch(executor, body: bytes) -> None:
    """One batch through the Executor as the worker runs it, reply encoding included."""
    hdr, ops = executor.open_batch(body)
    reply, _ = executor.run_batch(hdr, ops, [])
    codec.packb(reply)
    executor.after_reply()


def chain_per_op(executor, table, xp, x, ops: int = 512, batches: int = 10, blocks: int = 7):
    """``x = x + 1`` in 512-op batches as a client sends them (each result freed by the next
    record), through the Executor, and the same loop in the library alone: the least of
    *blocks* blocks, microseconds per op."""
    pack, H = codec.make_packer().pack, codec.Handle
    seq, hid = 0, 1

    def encoded() -> list[bytes]:
        nonlocal seq, hid
        bodies = []
        for b in range(batches):
            parts = [codec.packb({"k": b"", "b": b, "n": ops, "r": None})]
            for _ in range(ops):
                seq += 1
                new = 1_000_000 + seq
                parts += [pack([seq, "o", "a", new, "add"]), pack([None, [H(hid), 1], {}])]
                if hid != 1:
                    parts.append(pack(hid))
                hid = new
            bodies.append(b"".join(parts))
        return bodies

    through = alone = float("inf")
    for _ in range(blocks):
        bodies = encoded()
        run_batch(executor, bodies[0])   # (warm)
        t0 = time.perf_counter()
        for body in bodies[1:]:
            run_batch(executor, body)
        through = min(through, (time.perf_counter() - t0) / ((batches - 1) * ops) * 1e6)
        y = x
        t0 = time.perf_counter()
        for _ in range((batches - 1) * ops):
            y = y + 1
        float(y[0])
        alone = min(alone, (time.perf_counter() - t0) / ((batches - 1) * ops) * 1e6)
    table.free(hid)
    return through, alone


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    device = open_device(args.device)
    xp = device.cupy if device.kind == "cupy" else __import__("numpy")
    x = xp.arange(1024, dtype=xp.float32)
    print("library alone          ", round(timeit(lambda: float((x + 1).sum())), 1), "us")
    table = HandleTable(device)
    executor = Executor(device, table)  # installs the warning hooks
    device.set_memory_limit(8 << 30)
    print("with limit + hooks     ", round(timeit(lambda: float((x + 1).sum())), 1), "us")
    table.put(1, x)
    pack = codec.make_packer().pack
    header = codec.packb({"k": b"", "b": 1, "n": 3, "r": None})
    feed = iter(sync_batches(3400))

    def batch():
        run_batch(executor, next(feed))

    print("through Executor       ", round(timeit(batch), 1), "us")
    chain, alone = chain_per_op(executor, table, xp, x)
    print("x = x + 1 chain, per op: through Executor", round(chain, 2), "us, library alone",
          round(alone, 2), "us")
    encode_only = codec.packb
    print("(reply encoding alone) ", round(timeit(lambda: encode_only({"b": 1, "m": b"\x90", "v": [[3, 1.0]], "d": [], "e": None, "w": [], "x": 3, "s": 0})), 2), "us")
    if device.kind == "cupy":
        gemm(device, executor, table, pack, header)


def gemm(device, executor, table, pack, header, n=8192, reps=20):
    """fp16 GEMM: plain CuPy in this process, then the same ops through the Executor."""
    cp = device.cupy
    a = cp.random.rand(n, n).astype(cp.float16)
    b = cp.random.rand(n, n).astype(cp.float16)
    sync = cp.cuda.get_current_stream().synchronize

    def plain():
        c = a @ b
        for _ in range(reps - 1):
            c = a @ b
        sync()
        return c

    table.put(2, a)
    table.put(3, b)
    H = codec.Handle
    records = [header]
    for i in range(reps):
        records += [pack([i + 1, "o", "a", 100 + i, "matmul"]), pack([None, [H(2), H(3)], {}])]
        if i:
            records.append(pack(100 + i - 1))
    body = b"".join(records)

    def proxied():
        hdr, ops = executor.open_batch(body)
        reply, _ = executor.run_batch(hdr, ops, [])
        assert reply["e"] is None, reply["e"]
        executor.after_reply()
        sync()
        table.free(100 + reps - 1)

    for label, fn in (("plain", plain), ("executor", proxied), ("plain", plain), ("executor", proxied)):
        fn()
        t0 = time.perf_counter()
        fn()
        dt = (time.perf_counter() - t0) / reps
        print(f"GEMM fp16 {n} {label:9}", round(2 * n ** 3 / dt / 1e12, 1), "TFLOP/s")


if __name__ == "__main__":
    main()
