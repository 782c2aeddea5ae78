"""How long a session takes to open when its worker must start: forked from the pool's
zygote, or started cold as its own Python process (``--no-worker-zygote``).

    python benchmarks/session_open.py [--devices cpu] [--sessions 30] [--json out.json]

With one warm spare per device, each ``connect`` takes the spare and the pool starts the
next worker at once; opening sessions back to back, each hello after the first waits for
that worker to start and report ready. So a loop of open-and-close measures a worker's
start, as a user meets it when several sessions open at once (a class of notebooks, a
script that opens one per device). A worker's ``ready`` includes its device's set-up (on a
GPU: CuPy's import, the CUDA context, cuBLAS), which the zygote does not save: CuPy must
load after the fork.

Both ways run side by side in one process, alternating pools, on the same device. Prints a
table, then one JSON object (also ``--json``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import kernelproxy  # noqa: E402
from gpu_backend.pool import LocalPool  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from kernelproxy.modules import module_for  # noqa: E402


def _open_close(pool: LocalPool, sessions: int) -> list[float]:
    """Seconds to open each session (connect, one op answered) then close it, in a row."""
    times = []
    for _ in range(sessions):
        start = time.perf_counter()
        with kernelproxy.connect(pool.address, pool.token, timeout=120) as session:
            float(module_for(session).ones(4).sum())
            times.append(time.perf_counter() - start)
    return times


def _figures(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"median_ms": statistics.median(ordered) * 1e3,
            "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] * 1e3,
            "first_ms": times[0] * 1e3, "n": len(times)}


def measure(device: str, sessions: int, rounds: int) -> dict:
    """Each way, *rounds* pools alternating, *sessions* sessions each (the first session of
    each pool is left out: it takes the spare started with the pool)."""
    runs: dict[str, list[float]] = {"zygote": [], "cold": []}
    for _ in range(rounds):
        for way in ("zygote", "cold"):
            with LocalPool(devices=device, worker_zygote=way == "zygote", policy="fair",
                           lease_timeout=30) as pool:
                runs[way] += _open_close(pool, sessions + 1)[1:]
    result = {way: _figures(times) for way, times in runs.items()}
    result["cold_over_zygote"] = result["cold"]["median_ms"] / result["zygote"]["median_ms"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="cpu", help="the device to open sessions on")
    parser.add_argument("--sessions", type=int, default=30, help="sessions per pool")
    parser.add_argument("--rounds", type=int, default=2, help="pools per way, alternating")
    parser.add_argument("--json", help="also write the JSON result here")
    args = parser.parse_args(argv)
    figures = measure(args.devices, args.sessions, args.rounds)
    print(f"session open (worker start, hello, one op) on {args.devices}, "
          f"{args.rounds} x {args.sessions} sessions per way")
    print(f"{'way':<8} {'median ms':>10} {'p90 ms':>10}")
    for way in ("zygote", "cold"):
        print(f"{way:<8} {figures[way]['median_ms']:>10.1f} {figures[way]['p90_ms']:>10.1f}")
    print(f"cold / zygote (median): {figures['cold_over_zygote']:.2f}")
    emit({"benchmark": "session_open", "date": datetime.now(timezone.utc).isoformat(),
          "host": platform.node(), "cores": os.cpu_count(), "devices": args.devices,
          "sessions": args.sessions, "rounds": args.rounds, **figures}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
