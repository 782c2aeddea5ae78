"""Loops with no sync point in their steady state: local CuPy beside the pool, pieces of
several lengths, and the pool without cuts, side by side in one run.

    python benchmarks/no_sync_steady.py [--devices auto] [--steps 2000] [--sizes 10000,1000000]
        [--pieces 32,64,128] [--transports ipc,ipc-nocuts] [--json out.json] [--quick]

``programs.py``'s no-sync loops run 200-300 steps, of which the first tens go as ops while
the session finds the loop's period and holds a piece (kernelproxy/loop_cuts.py): they
judge the learning as much as the replays. Here each loop first runs 200 steps (learning),
then three timed runs of ``--steps`` steps, each ended by one read; the median of the three
is reported per iteration, and its ratio to local CuPy's (NumPy's on a machine without a
GPU). Two loops of ``programs.py``, each at every ``--sizes``: ``relax`` (``no_sync_loop``:
six elementwise ops on two carried arrays) and ``momentum`` (``momentum_no_sync``: in-place
updates, a 0-d sum kept on the device). The ``ipc`` side runs once for each piece length in ``--pieces`` (the
client's ``kernelproxy.loop_cuts.MIN_PIECE_OPS``, set in this process), one session, so a
later length or size meets the stretches the earlier held (a stale one is offered again:
docs/stretch-replay.md); ``ipc-nocuts`` (``GPUWB_LOOP_CUTS=0``) is the pool without cuts.
Each side is alone in a pool of its own (``served_pool.sessions_for(own_pools=True)``).
Every result is checked against local's (bitwise on a GPU). The JSON holds every figure
and each configuration's worker fallbacks (replays re-run from their records).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernelproxy.loop_cuts as loop_cuts  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402
from program_bodies import momentum_no_sync, no_sync_loop  # noqa: E402
from programs import local_module  # noqa: E402
from served_pool import sessions_for  # noqa: E402

LEARN_STEPS = 200


#: the loops (programs.py's, each given its steps): relax is no_sync_loop's body
LOOPS = {"relax": no_sync_loop, "momentum": momentum_no_sync}


def timed(loop, xp, n: int, steps: int) -> tuple[float, np.ndarray]:
    """(median µs an iteration of three runs of *steps*, the last run's result), after a
    run of LEARN_STEPS."""
    loop(xp, n, LEARN_STEPS)
    times, value = [], None
    for _ in range(3):
        start = time.perf_counter()
        value = loop(xp, n, steps)
        times.append((time.perf_counter() - start) / steps * 1e6)
    return statistics.median(times), value


def _fallbacks(session) -> int:
    return (session.memory_info().get("stretches") or {}).get("fallbacks", 0)


def measure(devices: str, steps: int, sizes: list[int], pieces: list[int], transports: str) -> dict:
    local_xp, local_kind = local_module()
    rows, values = {}, {}
    for name, loop in LOOPS.items():
        for n in sizes:
            rows[f"{name} {n} local"], values[(name, n)] = timed(loop, local_xp, n, steps)
    failures = []
    with sessions_for("fair", devices, transports, own_pools=True) as sessions:
        for side, session in sessions.items():
            xp = module_for(session)
            cuts = not side.endswith("-nocuts")
            for piece in (pieces if cuts else pieces[:1]):
                loop_cuts.MIN_PIECE_OPS = piece
                label = f"{side} {piece}" if cuts else side
                for name, loop in LOOPS.items():
                    for n in sizes:
                        before = _fallbacks(session)
                        us, value = timed(loop, xp, n, steps)
                        rows[f"{name} {n} {label}"] = us
                        rows[f"{name} {n} {label} fallbacks"] = _fallbacks(session) - before
                        want = values[(name, n)]
                        if not (np.array_equal(value, want) or (
                                local_kind != "cupy" and np.allclose(value, want, rtol=1e-4))):
                            failures.append((name, n, label, value, want))
            rows[f"{side} stretches"] = session.stretches.figures() if session.stretches else None
    return {"local_kind": local_kind, "rows": rows, "failures": failures}


def table(result: dict, sizes: list[int]) -> str:
    rows = result["rows"]
    lines = [f"{'loop':10s} {'n':>9s} {'side':24s} {'us/iteration':>13s} {'x local':>8s} {'fallbacks':>9s}",
             "-" * 78]
    for key, us in rows.items():
        parts = key.split(" ", 2)
        if len(parts) < 3 or parts[2] == "local" or key.endswith("fallbacks") or key.endswith("stretches"):
            continue
        name, n, side = parts
        base = rows[f"{name} {n} local"]
        lines.append(f"{name:10s} {n:>9s} {side:24s} {us:13.1f} {us / base:8.2f} "
                     f"{rows.get(key + ' fallbacks', 0):9d}")
    for name in LOOPS:
        for n in sizes:
            lines.append(f"{name:10s} {n:>9d} {'local (' + result['local_kind'] + ')':24s} "
                         f"{rows[f'{name} {n} local']:13.1f} {1.0:8.2f}")
    lines.append("target (issue 50): a loop of >= 20 iterations <= 0.50x local")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--pieces", default="32,64,128")
    parser.add_argument("--transports", default="ipc,ipc-nocuts")
    parser.add_argument("--quick", action="store_true", help="60 steps, 2 000 elements, pieces of 32")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    steps, sizes, pieces = args.steps, [int(s) for s in args.sizes.split(",")], \
        [int(p) for p in args.pieces.split(",")]
    if args.quick:
        steps, sizes, pieces = 60, [2000], [32]
    result = measure(args.devices, steps, sizes, pieces, args.transports)
    result.update(date=time.strftime("%Y-%m-%dT%H:%M:%S%z"), command=" ".join(sys.argv),
                  steps=steps, sizes=sizes, pieces=pieces)
    print(table(result, sizes))
    if result["failures"]:
        print("results that differ from local's:", result["failures"])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
