"""An interactive user's latency beside a busy one, with the workers' settings side by side.

    python benchmarks/interactive_beside.py [--devices cpu] [--turns] [--policy share]
        [--requests 300] [--every-ms 10] [--sides default,GPUWB_READ_GAP_SHARE=0,policy=none]
        [--busy elementwise|gemm:N|none] [--json FILE]

For each side (the workers' settings: ``default``, or ``NAME=VALUE[+NAME=VALUE...]``, where
``policy=NAME`` sets that side's policy instead of ``--policy``; or ``local``: the same
requests on local CuPy, alone, the twin of ``--busy none``; a side named again is measured
again, for passes that alternate) an embedded pool is started
with those variables (its workers inherit them); a busy user, a process of its own with its
own session, loops eight elementwise ops on 400 000 float64 and a read of one element
(``--busy elementwise``), or 32 N² float32 GEMMs and a read (``gemm:N``: fairness.py's
interactive+2048 user with ``gemm:2048``, reading every ~10 ms), or no one (``none``: the
interactive user alone, fairness.py's alone-interactive); beside it the interactive user (this process)
asks ``float((x + 1).sum())`` of 1 000 float32 every ``--every-ms``, timing each request
from its own side. Printed: each side's p50 / p99 / p99.9 in ms and its session's stretch
figures (replays answered from a run ahead, reads made at once), then the JSON.

A diagnostic beside ``fairness.py``'s interactive scenarios (which judge the policies
against each other): this one puts two settings of the same policy side by side in one
run, on a GPU or on the NumPy device (``--turns``: its sessions take turns as one GPU's
do, devices/host_turns.py). Made for issue 51's reads made at once beside a client's gaps
(worker/run_ahead.py, ``GAP_SHARE``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402

#: the busy user: its loop until the stop file appears; ``elementwise``: eight elementwise ops
#: on 400 000 float64 and a read of one element; ``gemm:N``: 32 N² float32 GEMMs (2048: about
#: 10 ms on an H100, fairness.py's interactive+2048 user's GEMM) and a read of one element
BUSY = """
import os, sys, kernelproxy
from kernelproxy.modules import module_for
with kernelproxy.connect(sys.argv[1], sys.argv[2]) as s:
    cp = module_for(s)
    kind = sys.argv[4]
    if kind == "elementwise":
        a = cp.arange(400000, dtype=cp.float64) / 3
        float(a[0])
    else:
        n = int(kind.split(":", 1)[1])
        a = cp.arange(n * n, dtype=cp.float32).reshape(n, n) / (n * n)
        b = a.T.copy()
        float((a @ b)[0, 0])
    print("busy", flush=True)
    while not os.path.exists(sys.argv[3]):
        if kind == "elementwise":
            for _ in range(8):
                a = cp.sin(a) * 0.5 + a * 0.25
            float(a[0])
        else:
            for _ in range(32):
                c = a @ b
            float(c[0, 0])
"""


#: the pool's policies a side may name (gpu_backend/config.py)
POLICIES = ("share", "fair", "fifo", "none")


def side_variables(side: str) -> dict[str, str]:
    """A side's variables: ``default`` none, else ``NAME=VALUE`` joined by ``+`` (``policy=NAME``
    among them: the pool's policy for this side, not a variable)."""
    if side == "default":
        return {}
    pairs = [item.split("=", 1) for item in side.split("+")]
    if any(len(pair) != 2 or not pair[0] for pair in pairs):
        raise SystemExit(f"a side is 'default' or NAME=VALUE[+NAME=VALUE...]: {side!r}")
    return dict(pairs)


def busy_kind(text: str) -> str:
    """``--busy``, checked before anything starts."""
    if text in ("elementwise", "none"):
        return text
    size = text.removeprefix("gemm:")
    try:
        if size == text or int(size) < 1:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"--busy is elementwise, gemm:N or none: {text!r}") from None
    return text


def requests(xp, every_ms: float, count: int) -> list[float]:
    """The interactive user's requests on *xp* (a session's module, or local CuPy): 20 to
    warm up (its stretch held, captured, run ahead), then *count* timed, a pause after each."""
    x = xp.arange(1000, dtype=xp.float32)
    for _ in range(20):
        float((x + 1).sum())
        time.sleep(every_ms / 1000)
    took = []
    for _ in range(count):
        t0 = time.perf_counter()
        float((x + 1).sum())
        took.append(time.perf_counter() - t0)
        time.sleep(every_ms / 1000)
    return took


def summary(took: list[float]) -> dict:
    took = sorted(took)
    n = len(took)
    pick = lambda q: round(took[min(n - 1, int(q * n))] * 1e3, 3)   # noqa: E731
    return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "p999_ms": pick(0.999), "requests": n}


def measure_local(args: argparse.Namespace) -> dict:
    """The side ``local``: the same requests on local CuPy (NumPy without a GPU), alone —
    the twin of a lone pool user's figures (``--busy none``)."""
    from programs import local_module

    xp, kind = local_module()
    return {"variables": {}, "policy": f"local {kind}", **summary(requests(xp, args.every_ms, args.requests)),
            "ahead": None, "ahead_read": None, "replays": None, "push_taken": None,
            "push_confirmed": None}


def measure(side: str, args: argparse.Namespace) -> dict:
    if side == "local":
        return measure_local(args)
    from gpu_backend.pool import LocalPool
    from kernelproxy.modules import module_for
    from kernelproxy.session import Session

    variables = side_variables(side)
    policy = variables.pop("policy", args.policy)
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    stop = os.path.join(tempfile.mkdtemp(prefix="interactive-beside-"), "stop")
    try:
        with LocalPool(devices=args.devices, policy=policy,
                       numpy_device_turns=args.turns) as pool:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
            busy = None if args.busy == "none" else subprocess.Popen(
                [sys.executable, "-c", BUSY, pool.address, pool.token, stop, args.busy],
                stdout=subprocess.PIPE, text=True, env=env)
            try:
                if busy is not None and busy.stdout.readline().strip() != "busy":
                    raise SystemExit("the busy user did not start")
                with Session(pool.address, pool.token) as s:
                    took = requests(module_for(s), args.every_ms, args.requests)
                    stretches = s.memory_info().get("stretches") or {}
            finally:
                open(stop, "w").close()
                try:
                    if busy is not None:
                        busy.wait(60)
                except subprocess.TimeoutExpired:
                    busy.kill()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return {"variables": variables, "policy": policy, **summary(took),
            "ahead": stretches.get("ahead"), "ahead_read": stretches.get("ahead_read"),
            "replays": stretches.get("replays"), "push_taken": stretches.get("push_taken"),
            "push_confirmed": stretches.get("push_confirmed")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--turns", action="store_true",
                        help="the NumPy device's sessions take turns as one GPU's (--devices cpu)")
    parser.add_argument("--policy", default="share")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--every-ms", type=float, default=10.0)
    parser.add_argument("--sides", default="default,GPUWB_READ_GAP_SHARE=0",
                        help="comma-separated: default, or NAME=VALUE[+NAME=VALUE...]; policy=NAME "
                             "sets that side's policy")
    parser.add_argument("--busy", default="elementwise", type=busy_kind,
                        help="the busy user's loop: elementwise, gemm:N (32 N² GEMMs a read), "
                             "or none (the interactive user alone)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    names = args.sides.split(",")
    for side in names:   # (every side checked before any pool starts)
        if side == "local":
            continue
        policy = side_variables(side).get("policy", args.policy)
        if policy not in POLICIES:
            parser.error(f"a side's policy is one of {', '.join(POLICIES)}: {side!r}")
    sides = {}
    for side in names:   # (a side named again is measured again: passes alternating sides)
        label = side if side not in sides else f"{side} #{sum(k.split(' #')[0] == side for k in sides) + 1}"
        sides[label] = measure(side, args)
    print(f"{'side':40s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99.9 ms':>9s} {'ahead':>6s} {'read':>6s} "
          f"{'replays':>8s} {'pushed':>7s}")
    for side, row in sides.items():
        print(f"{side:40s} {row['p50_ms']:8.3f} {row['p99_ms']:8.3f} {row['p999_ms']:9.3f} "
              f"{row['ahead'] or 0:6d} {row['ahead_read'] or 0:6d} {row['replays'] or 0:8d} "
              f"{(row['push_taken'] or 0) + (row['push_confirmed'] or 0):7d}")
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python benchmarks/interactive_beside.py " + " ".join(argv or sys.argv[1:]),
          "devices": args.devices, "turns": args.turns, "policy": args.policy,
          "every_ms": args.every_ms, "busy": args.busy, "sides": sides}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
