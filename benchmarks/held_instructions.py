"""The client's CPU work per iteration of a held loop, in instructions (valgrind's callgrind):
a figure that does not swing with the machine's load, as a timing on a 2-core VM does.

    python benchmarks/held_instructions.py [--loops chain20,hot_sync] [--sides early,noearly]
        [--iterations 200] [--warmup 60] [--repeats 2]

A pool (``ServedPool("none", "cpu")``, its own process, never under valgrind) serves every
run; each run is one client process under ``valgrind --tool=callgrind`` that opens a
session on the pool's same-host door (``GPUWB_REPLAY_MEASURED=0``: the stretch stays held),
runs ``--warmup`` iterations (the stretch offered, held, its template built, its early plan
learnt), then ``--iterations`` more, counted alone (callgrind's collection is switched on and
off around them, ``CALLGRIND_TOGGLE_COLLECT`` through a helper built with ``cc``; the main
thread only, not the heartbeat's): their total over their number is the client's
instructions per held iteration, ``--repeats`` runs each (sorted). ``chain20``: ``program_bodies.chain20_body`` and
``float(x.sum())``; ``hot_sync``: ``float((x + 1).sum())`` on 1000 float32. Sides:
``early`` (the default settings), ``noearly`` (``GPUWB_EARLY_REPLAY=0``). Each run checks
that its timed iterations were answered from the template (and, ``early``, sent early).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SIDES = {"early": {}, "noearly": {"GPUWB_EARLY_REPLAY": "0"}}


def warmed(address: str, token: str, loop: str, warmup: int) -> tuple:
    """A session on the pool and *loop* (program_bodies.held_step) run *warmup* times in it:
    (session, state, step); worker_instructions.py's client starts so too."""
    import kernelproxy
    from kernelproxy.modules import module_for
    from program_bodies import held_step

    session = kernelproxy.connect(address, token)
    x, step = held_step(module_for(session), loop)
    for _ in range(warmup):
        x = step(x)
    return session, x, step


def client(address: str, token: str, loop: str, warmup: int, n: int) -> None:
    """One client run (under valgrind): the loop, warmed, then *n* iterations."""
    session, x, step = warmed(address, token, loop, warmup)
    stretches = session.stretches
    fast, early = stretches.fast_replays, stretches.early_sent
    toggle = _toggle()
    toggle()
    for _ in range(n):
        x = step(x)
    toggle()
    print(json.dumps({"fast": stretches.fast_replays - fast, "early": stretches.early_sent - early}))
    session.close()


_TOGGLE_C = """#include <valgrind/callgrind.h>
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
"""


def _toggle():
    """callgrind's collection switched on or off (``--collect-atstart=no``): the timed
    iterations alone are counted, not the start-up, the warm-up or the close."""
    import ctypes
    library = os.environ.get("HELD_INSTRUCTIONS_TOGGLE")
    if not library:
        return lambda: None
    return ctypes.CDLL(library).toggle


def _instructions(out_file: str) -> int:
    """The main thread's instructions (the heartbeat's thread is another's file)."""
    with open(out_file) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {out_file}")


def measure(pool, loop: str, side: str, warmup: int, n: int, workdir: str) -> tuple[int, dict]:
    out = os.path.join(workdir, f"cg.{loop}.{side}.{n}")
    env = {**os.environ, "GPUWB_REPLAY_MEASURED": "0", "PYTHONHASHSEED": "0", **SIDES[side],
           "HELD_INSTRUCTIONS_TOGGLE": os.path.join(workdir, "toggle.so")}
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
           "--separate-threads=yes", sys.executable,
           os.path.abspath(__file__), "--client", pool.local_address, pool.token, loop,
           str(warmup), str(n)]
    for _attempt in range(4):   # (a pool busy starting a worker may miss a slow client's ping)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode == 0 or "did not answer" not in done.stderr:
            break
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    counts = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    return _instructions(out + "-01"), counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--loops", default="chain20,hot_sync")
    parser.add_argument("--sides", default="early,noearly")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--keep", help="a folder to keep callgrind's files in (callgrind_annotate)")
    args = parser.parse_args()
    if args.client:
        address, token, loop, warmup, n = args.client
        client(address, token, loop, int(warmup), int(n))
        return 0
    from gpu_backend.served import ServedPool
    pool = ServedPool("none", "cpu")
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="held-instr-") as scratch:
            workdir = args.keep or scratch
            os.makedirs(workdir, exist_ok=True)
            with open(os.path.join(workdir, "toggle.c"), "w") as f:
                f.write(_TOGGLE_C)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", os.path.join(workdir, "toggle.so"),
                            os.path.join(workdir, "toggle.c")], check=True)
            for loop in args.loops.split(","):
                for side in args.sides.split(","):
                    n = args.iterations
                    runs = [measure(pool, loop, side, args.warmup, n, workdir)
                            for _ in range(args.repeats)]
                    pers = sorted(total / n for total, _counts in runs)
                    results[f"{loop}/{side}"] = pers
                    counts = runs[0][1]
                    print(f"{loop:9s} {side:8s} " + " ".join(f"{p:10,.0f}" for p in pers)
                          + f" instructions/iteration (fast {counts['fast']}/{n}, "
                          f"early {counts['early']})", flush=True)
    finally:
        pool.stop()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
