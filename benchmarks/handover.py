"""What one hand-over of a GPU between two processes costs, with no pool in the way.

    python benchmarks/handover.py [--seconds 3] [--quanta 1,2,5,10] [--json out.json]

The fair-share arbiter hands a device from one session's worker to another's every
quantum. Each worker is its own process with its own CUDA context, so every hand-over
drains the device, signals the next process and switches contexts. This script measures
that floor with plain CuPy, to say how much of the pool's missing work conservation any
arbiter that time-slices processes must lose, and how much is ours:

  solo       one process, GEMMs back to back (two in flight): the device's rate
  free       two processes, GEMMs back to back each: CUDA's own time-slicing
             (the pool's ``--policy none``)
  streams    one process alternating two streams every quantum, draining between
             turns: the drain and relaunch without a context switch
  procs      two processes taking turns every quantum through a flag in shared
             memory: the holder drains its work, then flips the flag; the other
             spins on it and launches (the pool's baton, without the pool)
  early      as ``procs``, but the holder flips the flag when its last GEMM has about
             ``--early-us`` left, so the next process's first GEMM is queued before
             the device runs dry (may the GPU then time-slice the two?)

Per mode and quantum: GEMMs per second relative to ``solo``, the device time lost per
hand-over (µs), and the mean device span of a turn's GEMMs against ``solo``'s (a switch
cost that lands inside the next turn's first GEMM shows there). Prints a table and JSON.
Needs CuPy and a GPU.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from datetime import datetime, timezone
from multiprocessing import shared_memory

import numpy as np

from json_out import emit   # (beside this file)

N, DTYPE = 6144, "float16"     # as benchmarks/fairness.py's big GEMM: ~0.6-0.7 ms on an H100
TURN, STOP, READY = 0, 1, 2    # slots of the shared flag array


def _operands(cp, n, dtype):
    rng = cp.random.default_rng(0)
    return rng.random((n, n), dtype=cp.float32).astype(dtype), rng.random((n, n), dtype=cp.float32).astype(dtype)


def _spin_until(event) -> None:
    while not event.done:
        pass


def per_gemm_ms(cp, a, b) -> float:
    """One GEMM's device time (ms), 20 back to back, after a warm-up."""
    for _ in range(10):   # cuBLAS's first call loads its kernels: 6 ms "per GEMM" (H100)
        a @ b
    cp.cuda.get_current_stream().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(20):
        a @ b
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 20


def solo_rate(cp, a, b, seconds: float) -> tuple[float, float]:
    """GEMMs per second with two always in flight, and one GEMM's device time (ms)."""
    per_gemm = per_gemm_ms(cp, a, b)
    events = [cp.cuda.Event(), cp.cuda.Event()]
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        events[done % 2].record()
        done += 1
        if done > 1:
            events[done % 2].synchronize()   # the one before: two in flight
    cp.cuda.get_current_stream().synchronize()
    return done / (time.perf_counter() - t0), per_gemm


def streams_rate(cp, a, b, seconds: float, per_turn: int) -> dict:
    """One process, two streams in turn, draining between turns: no context switch."""
    streams = [cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)]
    done, turns, spans, t0 = 0, 0, [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        with streams[turns % 2]:
            first, last = cp.cuda.Event(), cp.cuda.Event()
            first.record()
            for _ in range(per_turn):
                a @ b
            last.record()
        _spin_until(last)
        spans.append(cp.cuda.get_elapsed_time(first, last) / per_turn)
        done += per_turn
        turns += 1
    elapsed = time.perf_counter() - t0
    return {"rate": done / elapsed, "turns": turns, "elapsed": elapsed, "span_ms": float(np.mean(spans))}


def _process(role: int, mode: str, shm_name: str, n: int, dtype: str, seconds: float,
             per_turn: int, early_s: float, per_gemm_s: float, results) -> None:
    """One of the two processes of ``free``, ``procs`` or ``early``."""
    import cupy as cp

    shm = shared_memory.SharedMemory(name=shm_name)
    flags = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
    a, b = _operands(cp, n, dtype)
    for _ in range(10):
        a @ b
    cp.cuda.get_current_stream().synchronize()
    flags[READY + role] = 1
    while flags[READY] == 0 or flags[READY + 1] == 0:
        pass
    done, turns, spans, t0 = 0, 0, [], time.perf_counter()
    if mode == "free":
        events = [cp.cuda.Event(), cp.cuda.Event()]
        while time.perf_counter() - t0 < seconds:
            a @ b
            events[done % 2].record()
            done += 1
            if done > 1:
                events[done % 2].synchronize()
    else:
        while True:
            while flags[TURN] != role and not flags[STOP]:
                pass
            if flags[STOP]:
                break
            first, before_last, last = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
            first.record()
            for i in range(per_turn):
                if i == per_turn - 1:
                    before_last.record()
                a @ b
            last.record()
            if mode == "early":
                # the last GEMM has begun: hand over when about early_s of it is left
                _spin_until(before_last)
                due = time.perf_counter() + max(per_gemm_s - early_s, 0.0)
                while time.perf_counter() < due:
                    pass
            else:
                _spin_until(last)
            if time.perf_counter() - t0 >= seconds:
                flags[STOP] = 1
            flags[TURN] = 1 - role
            last.synchronize()
            spans.append(cp.cuda.get_elapsed_time(first, last) / per_turn)
            done += per_turn
            turns += 1
    cp.cuda.get_current_stream().synchronize()
    results.put({"role": role, "done": done, "turns": turns, "elapsed": time.perf_counter() - t0,
                 "span_ms": float(np.mean(spans)) if spans else None})
    shm.close()


def two_processes(mode: str, seconds: float, per_turn: int, early_s: float, per_gemm_s: float,
                  n: int, dtype: str) -> dict:
    """Run ``free``, ``procs`` or ``early`` and sum the two processes' GEMMs."""
    ctx = mp.get_context("spawn")
    shm = shared_memory.SharedMemory(create=True, size=32)
    flags = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
    flags[:] = 0
    results = ctx.Queue()
    procs = [ctx.Process(target=_process, args=(role, mode, shm.name, n, dtype, seconds, per_turn,
                                                early_s, per_gemm_s, results)) for role in (0, 1)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    shm.close()
    shm.unlink()
    elapsed = max(r["elapsed"] for r in got)
    spans = [r["span_ms"] for r in got if r["span_ms"] is not None]
    return {"rate": sum(r["done"] for r in got) / elapsed, "turns": sum(r["turns"] for r in got),
            "elapsed": elapsed, "span_ms": float(np.mean(spans)) if spans else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="per mode and quantum")
    parser.add_argument("--quanta", default="1,2,5,10", help="ms of GEMMs per turn")
    parser.add_argument("--modes", default="free,streams,procs,early")
    parser.add_argument("--early-us", type=float, default=150.0)
    parser.add_argument("--n", type=int, default=N)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)

    import cupy as cp

    a, b = _operands(cp, args.n, DTYPE)
    solo, per_gemm_ms = solo_rate(cp, a, b, args.seconds)
    rows = [{"mode": "solo", "quantum_ms": None, "per_turn": None, "rate": solo, "relative": 1.0,
             "loss_us": None, "span_ms": per_gemm_ms}]
    modes = args.modes.split(",")
    if "free" in modes:
        r = two_processes("free", args.seconds, 0, 0.0, 0.0, args.n, DTYPE)
        rows.append({"mode": "free", "quantum_ms": None, "per_turn": None, "rate": r["rate"],
                     "relative": r["rate"] / solo, "loss_us": None, "span_ms": None})
    for quantum in (float(q) for q in args.quanta.split(",")):
        per_turn = max(1, round(quantum / per_gemm_ms))
        for mode in (m for m in modes if m in ("streams", "procs", "early")):
            if mode == "streams":
                r = streams_rate(cp, a, b, args.seconds, per_turn)
            else:
                r = two_processes(mode, args.seconds, per_turn, args.early_us * 1e-6, per_gemm_ms * 1e-3,
                                  args.n, DTYPE)
            gemms = r["rate"] * r["elapsed"]
            lost = r["elapsed"] - gemms / solo
            rows.append({"mode": mode, "quantum_ms": quantum, "per_turn": per_turn, "rate": r["rate"],
                         "relative": r["rate"] / solo, "loss_us": lost / max(r["turns"], 1) * 1e6,
                         "span_ms": r["span_ms"]})
    props = cp.cuda.runtime.getDeviceProperties(0)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"hand-over floor on {gpu}: {args.n}² {DTYPE} GEMM {per_gemm_ms:.3f} ms, solo {solo:.0f} GEMM/s")
    print(f"{'mode':8} {'quantum':>8} {'GEMMs/turn':>10} {'GEMM/s':>8} {'vs solo':>8} {'lost/turn µs':>13} {'span/GEMM ms':>13}")
    for row in rows:
        q = f"{row['quantum_ms']:g} ms" if row["quantum_ms"] else "-"
        loss = f"{row['loss_us']:.0f}" if row["loss_us"] is not None else "-"
        span = f"{row['span_ms']:.3f}" if row["span_ms"] is not None else "-"
        print(f"{row['mode']:8} {q:>8} {row['per_turn'] or '-':>10} {row['rate']:8.0f} {row['relative']:8.3f} {loss:>13} {span:>13}")
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "gpu": gpu,
              "gemm": {"n": args.n, "dtype": DTYPE, "ms": per_gemm_ms}, "seconds": args.seconds,
              "early_us": args.early_us, "rows": rows}
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
