"""The second correctness campaign's two-session loops (benchmarks/unseen_loops.py runs one
session at a time): two sessions of one embedded pool used alternately inside one loop, with
replay held (``SessionSettings(replay_measured=False)``, run ahead whatever its time) and
with replay off, each compared bit for bit with the same loop on NumPy.

    python benchmarks/unseen_two_sessions.py [--devices cpu] [--n 80]

Loops: the two sessions taking turns an iteration each; both stepped every iteration; each
session given the other's array through the client (a download, an upload); one session closed
half-way while the other goes on; the same loop in both with their reads interleaved op by
op. Exits 1 where any differs.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("GPUWB_RUN_AHEAD_US", "1e9")
os.environ.setdefault("GPUWB_READ_AHEAD_US", "1e9")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from unseen_loops import first_difference  # noqa: E402
from unseen_loop_bodies import fbits, host  # noqa: E402


def taking_turns(xp, use, n, close=None):
    """Session a steps on even iterations, b on odd ones, each its own carried array."""
    use(0)
    x = xp.linspace(0, 1, 32)
    use(1)
    y = xp.linspace(1, 2, 32)
    out = []
    for i in range(n):
        if i % 2 == 0:
            use(0)
            x = xp.exp(-x) * 0.99 + 0.01
            out.append(fbits(float(x.sum())))
        else:
            use(1)
            y = xp.sqrt(y) + 0.5
            out.append(fbits(float(y.sum())))
    return out, host(xp, x), host(xp, y)


def both_every_iteration(xp, use, n, close=None):
    """Both sessions step and read every iteration, the reads interleaved (the same body in
    both: the two workers hold the same stretch)."""
    use(0)
    x = xp.linspace(0, 1, 16)
    use(1)
    y = xp.linspace(0, 1, 16)
    out = []
    for i in range(n):
        use(0)
        x = xp.tanh(x) * 1.01 - 0.005
        use(1)
        y = xp.tanh(y) * 0.97 + 0.02
        sx = x.sum()
        sy = y.sum()
        out.append((fbits(float(sy)), fbits(float(sx))))
    return out, host(xp, x), host(xp, y)


def crossing_arrays(xp, use, n, close=None):
    """Each session is given the other's array every third iteration, through the client
    (a download and an upload: a session's function refuses another session's array)."""
    use(0)
    x = xp.linspace(0, 1, 8)
    use(1)
    y = xp.linspace(2, 3, 8)
    out = []
    for i in range(n):
        if i % 3 == 0:
            use(0)
            x = xp.add(x, xp.asarray(host(xp, y))) * 0.5
            use(1)
            y = xp.multiply(y, xp.asarray(host(xp, x))) * 0.25 + 1
        else:
            use(0)
            x = xp.cos(x) * 0.9 + 0.1
            use(1)
            y = xp.cos(y) * 0.8 + 0.3
        out.append((fbits(float(x.sum())), fbits(float(y.sum()))))
    return out, host(xp, x), host(xp, y)


def one_closed_midway(xp, use, n, close=None):
    """Both step each iteration until a's session is closed half-way; b goes on."""
    use(0)
    x = xp.linspace(0, 1, 16)
    use(1)
    y = xp.linspace(0, 1, 16)
    out = []
    for i in range(n):
        if i < n // 2:
            use(0)
            x = xp.sin(x) * 0.9 + 0.1
            out.append(fbits(float(x.sum())))
        elif i == n // 2:
            out.append(host(xp, x))
            if close is not None:
                close()
        use(1)
        y = xp.sin(y) * 0.95 + 0.05
        out.append(fbits(float(y.sum())))
    return out, host(xp, y)


LOOPS = [taking_turns, both_every_iteration, crossing_arrays, one_closed_midway]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--n", type=int, default=80)
    args = parser.parse_args(argv)

    from gpu_backend.pool import LocalPool
    from kernelproxy.modules import activate, module_for
    from kernelproxy.session import Session
    from kernelproxy.settings import SessionSettings

    bad = 0
    with LocalPool(devices=args.devices, memory_limit=1 << 28) as pool:
        for loop in LOOPS:
            with np.errstate(all="ignore"):
                expected = loop(np, lambda k: None, args.n)
            for side, settings in (("on", SessionSettings(replay_measured=False)),
                                   ("off", SessionSettings(graphs=False))):
                a = Session(pool.address, pool.token, settings=settings)
                b = Session(pool.address, pool.token, settings=settings)
                try:
                    xp = module_for(a)
                    got = loop(xp, lambda k: activate((a, b)[k]), args.n, close=a.close)
                    figures = [s.memory_info()["stretches"] for s in (a, b) if not s.closed]
                    diff = first_difference(got, expected)
                except Exception as e:  # noqa: BLE001
                    diff, figures = f"raised {type(e).__name__}: {e}", []
                finally:
                    for s in (a, b):
                        try:
                            s.close()
                        except Exception:  # noqa: BLE001
                            pass
                bad += diff is not None
                counts = [(f["replays"], f["graphed"], f["ahead"], f["lane"]) for f in figures]
                print(f"{loop.__name__:22s} {side:3s} {'ok' if diff is None else 'DIFFERS: ' + diff}"
                      f"  (replays, graphed, ahead, lane) {counts}", flush=True)
    print(f"{len(LOOPS) * 2} runs, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
