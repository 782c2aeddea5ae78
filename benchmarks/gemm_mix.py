"""Does a small GEMM cost the device more when it takes turns with a big one? Plain CuPy.

    python benchmarks/gemm_mix.py [--seconds 3] [--turn-ms 10] [--json out.json]

fairness.py's big-vs-small scenario misses its target by ~8 % because the pool charges
the small user (a 1024² float32 GEMM loop) 16-17 % more device time per GEMM than that
GEMM takes alone, while the big user (6144² float16) is charged what it takes alone
(docs/performance-log.md, runs 27-28). Candidates: the context switch landing in the first
GEMMs of a turn, the L2 cache the big GEMM leaves cold, or the GPU's clocks (a float16
tensor-core GEMM draws far more power than a float32 one, and the clock the power limit
allows may carry over into the small one's turn). This separates them, with no pool:

  alone     each workload alone, turns of ``--turn-ms`` of GEMMs back to back, drained
            between turns (the same fences a pooled user has, no other work)
  stream    one process, one stream: a big turn, then a small one, drained between
            turns: no context switch, the same clocks and caches as the mix
  procs     two processes (one workload each) taking turns through a flag in shared
            memory, as the pool's workers do: adds the context switch

Per mode and workload: device time per GEMM over its turns (CUDA events), the first GEMM
of a turn apart from the rest, and the SM clock and power ``nvidia-smi`` sampled during
the mode (every 50 ms). Prints a table and JSON. Needs CuPy and a GPU.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from datetime import datetime, timezone
from multiprocessing import shared_memory

import numpy as np

from gpu_clock import ClockSampler   # (beside this file)
from handover import READY, STOP, TURN, _operands, per_gemm_ms
from json_out import emit


def one_turn(cp, a, b, count: int) -> tuple[float, float]:
    """Run a turn of *count* GEMMs and drain it: (first GEMM's ms, mean ms of the others)."""
    first, after_first, last = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
    first.record()
    a @ b
    after_first.record()
    for _ in range(count - 1):
        a @ b
    last.record()
    while not last.done:
        pass
    head = cp.cuda.get_elapsed_time(first, after_first)
    rest = cp.cuda.get_elapsed_time(after_first, last) / max(count - 1, 1)
    return head, rest


def _summary(turns: list[tuple[float, float]], count: int) -> dict:
    heads = [h for h, _ in turns]
    rests = [r for _, r in turns]
    return {"turns": len(turns), "per_turn": count, "first_ms": float(np.median(heads)),
            "rest_ms": float(np.median(rests)),
            "per_gemm_ms": float(np.mean([(h + r * (count - 1)) / count for h, r in turns]))}


def in_one_process(cp, operands: dict, counts: dict, names: list[str], seconds: float) -> dict:
    """Turns of the named workloads in order, one stream, drained between turns."""
    turns: dict = {name: [] for name in names}
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for name in names:
            turns[name].append(one_turn(cp, *operands[name], counts[name]))
    return {name: _summary(got, counts[name]) for name, got in turns.items()}


def _process(role: int, shm_name: str, n: int, dtype: str, count: int, seconds: float, results) -> None:
    """One workload's process of ``procs``: a turn when the flag says so, then hand over."""
    import cupy as cp

    shm = shared_memory.SharedMemory(name=shm_name)
    flags = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
    a, b = _operands(cp, n, dtype)
    per_gemm_ms(cp, a, b)
    flags[READY + role] = 1
    while flags[READY] == 0 or flags[READY + 1] == 0:
        pass
    turns, t0 = [], time.perf_counter()
    while True:
        while flags[TURN] != role and not flags[STOP]:
            pass
        if flags[STOP]:
            break
        turns.append(one_turn(cp, a, b, count))
        if time.perf_counter() - t0 >= seconds:
            flags[STOP] = 1
        flags[TURN] = 1 - role
    results.put((role, turns))
    shm.close()


def in_two_processes(workloads: dict, counts: dict, seconds: float) -> dict:
    ctx = mp.get_context("spawn")
    shm = shared_memory.SharedMemory(create=True, size=32)
    flags = np.ndarray((4,), dtype=np.int64, buffer=shm.buf)
    flags[:] = 0
    results = ctx.Queue()
    names = ["big", "small"]
    procs = [ctx.Process(target=_process, args=(role, shm.name, *workloads[name], counts[name], seconds,
                                                results)) for role, name in enumerate(names)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=180) for _ in procs)
    for p in procs:
        p.join()
    shm.close()
    shm.unlink()
    return {name: _summary(got[role], counts[name]) for role, name in enumerate(names)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="per mode")
    parser.add_argument("--turn-ms", type=float, default=10.0, help="ms of GEMMs per turn")
    parser.add_argument("--rounds", type=int, default=2, help="times each mode runs, in turn")
    parser.add_argument("--big", default="6144:float16", help="N:DTYPE of the big GEMM")
    parser.add_argument("--small", default="1024:float32", help="N:DTYPE of the small GEMM")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    workloads = {name: (int(spec.split(":")[0]), spec.split(":")[1])
                 for name, spec in (("big", args.big), ("small", args.small))}

    import cupy as cp

    operands = {name: _operands(cp, n, dtype) for name, (n, dtype) in workloads.items()}
    alone_ms = {name: per_gemm_ms(cp, *ops) for name, ops in operands.items()}
    counts = {name: max(2, round(args.turn_ms / ms)) for name, ms in alone_ms.items()}
    clocks = ClockSampler()
    time.sleep(0.5)
    rows = []
    for round_ in range(args.rounds):
        for mode in ("alone", "stream", "procs"):
            if mode == "alone":   # one workload after the other: clocks read for each
                for name in workloads:
                    t0 = time.time()
                    found = in_one_process(cp, operands, counts, [name], args.seconds / 2)
                    rows.append({"round": round_, "mode": mode, "workload": name, **found[name],
                                 **clocks.between(t0, time.time())})
                continue
            t0 = time.time()
            if mode == "stream":
                found = in_one_process(cp, operands, counts, ["big", "small"], args.seconds)
            else:
                found = in_two_processes(workloads, counts, args.seconds)
            seen = clocks.between(t0, time.time())
            for name, summary in found.items():
                rows.append({"round": round_, "mode": mode, "workload": name, **summary, **seen})
    clocks.close()
    props = cp.cuda.runtime.getDeviceProperties(0)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"GEMM mix on {gpu}: big {args.big} {alone_ms['big']:.4f} ms, "
          f"small {args.small} {alone_ms['small']:.4f} ms alone; {args.turn_ms:g} ms turns")
    print(f"{'round':>5} {'mode':6} {'workload':8} {'turns':>6} {'first ms':>9} {'rest ms':>9} "
          f"{'per GEMM':>9} {'vs alone':>8} {'SM MHz':>7} {'W':>6}")
    base = {(r["round"], r["workload"]): r["per_gemm_ms"] for r in rows if r["mode"] == "alone"}
    for r in rows:
        r["vs_alone"] = r["per_gemm_ms"] / base[(r["round"], r["workload"])]
        mhz = f"{r['sm_mhz']:.0f}" if r["sm_mhz"] else "-"
        watts = f"{r['power_w']:.0f}" if r["power_w"] else "-"
        print(f"{r['round']:>5} {r['mode']:6} {r['workload']:8} {r['turns']:>6} {r['first_ms']:9.4f} "
              f"{r['rest_ms']:9.4f} {r['per_gemm_ms']:9.4f} {r['vs_alone']:8.3f} {mhz:>7} {watts:>6}")
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "gpu": gpu,
          "workloads": {k: list(v) for k, v in workloads.items()}, "alone_ms": alone_ms,
          "turn_ms": args.turn_ms, "counts": counts, "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
