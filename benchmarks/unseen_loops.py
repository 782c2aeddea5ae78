"""A correctness campaign: loop programs the tests have not seen, run through the pool with
stretch replay, early replay and run ahead on, against the same program with replay off and
against plain NumPy (or local CuPy on a GPU host), bit for bit.

    python benchmarks/unseen_loops.py [--programs a,b] [--devices cpu] [--local numpy]
        [--scale 1] [--timeout 90] [--json out.json]

Each program (``unseen_loop_bodies.py``, ``unseen_loop_bodies_more.py``, and the loops that
draw random numbers, ``unseen_loop_bodies_draws.py`` and ``unseen_loop_bodies_graphed_draws.py``
for a Generator's draws the graphs make, ``unseen_loop_bodies_call_scalars.py``, whose
scalars change through calls, ``unseen_loop_bodies_moving_slices.py``, whose slices'
bounds move, ``unseen_loop_bodies_eager_rows.py``, whose eager ops come before or between
a stretch's graphs, ``unseen_loop_bodies_uploads.py``, which upload a small host array
each step, ``unseen_loop_bodies_several_results.py``, which call functions of several
results, ``unseen_loop_bodies_user_kernels.py``, which launch the user's own kernels,
``unseen_loop_bodies_records.py``, which record each step by index, and
``unseen_loop_bodies_schedules.py``, whose step scalars follow schedules, many of them
NumPy's narrow floats, and ``unseen_loop_bodies_several_held.py``, whose steps hold calls of
several results at every place of a stretch)
is a plain function ``name(xp, n)``, a loop of *n*
iterations (>= 50) of the kind a CuPy user writes in a notebook, returning NumPy arrays, Python values, or lists and
tuples of them. It runs four times, each pool side on a fresh session of one embedded pool
(``--devices``: ``cpu``, the NumPy device; ``auto`` on a GPU host):

* ``on``: stretch replay, the client's fast path and early replay on, every repeated
  stretch kept held (``SessionSettings(replay_measured=False)``), the pool's workers
  running a loop's next replay ahead whatever its time (``GPUWB_RUN_AHEAD_US=1e9``,
  ``GPUWB_READ_AHEAD_US=1e9``, set before the pool starts: the workers inherit them);
* ``off``: replay off (``SessionSettings(graphs=False)``);
* ``measured``: a session's defaults (``SessionSettings()``: replays timed, a stretch whose
  replays are not faster let go), compared with ``off``;
* ``numpy``: the program in this process on ``--local`` (NumPy; ``cupy``: local CuPy on the
  GPU the pool uses). Programs whose values NumPy does not define the same (the pool's
  random draws are CuPy's generators) are compared with CuPy only.

The results are compared bitwise (dtype, shape, the bytes; a Python float by its bits). An
exception the program does not catch, a hang (``--timeout`` seconds a side) or an array
lost is a failure. The worker's stretch figures (``memory_info()["stretches"]``) and the
client's (``Session.stretches.figures()``) of the ``on`` session say whether the loop went
through the fast path: replays, graphed, run ahead, answered from the template (``fast``),
sent early, early replays undone, fallbacks; ``measured: replays`` is the defaults'.

Prints a line per program as it runs (with every difference's first place and count), a
table, the programs with problems and those whose replays were never graphed nor run ahead,
then one JSON object (also written to ``--json``). Exits 1 where any program had a problem.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import warnings
from typing import Any, Callable

os.environ.setdefault("GPUWB_RUN_AHEAD_US", "1e9")
os.environ.setdefault("GPUWB_READ_AHEAD_US", "1e9")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from json_out import emit  # noqa: E402
from unseen_programs import PROGRAMS, first_difference, run_side  # noqa: E402


def run_program(pool, name: str, fn: Callable, n: int, numpy_too: bool, timeout: float,
                local: Any = np) -> dict:
    from kernelproxy.modules import module_for
    from kernelproxy.session import Session
    from kernelproxy.settings import SessionSettings

    row: dict[str, Any] = {"program": name, "iterations": n}
    sides = {}
    for side, settings in (("on", SessionSettings(replay_measured=False)),
                           ("off", SessionSettings(graphs=False)),
                           ("measured", SessionSettings())):
        t0 = time.perf_counter()
        session = Session(pool.address, pool.token, settings=settings)
        try:
            status, value = run_side(fn, n, module_for(session), timeout)
            if status == "ok":
                try:
                    signal.setitimer(signal.ITIMER_REAL, timeout)
                    session.sync()
                    if side != "off":
                        prefix = "" if side == "on" else "measured_"
                        row[prefix + "worker"] = dict(session.memory_info()["stretches"])
                        row[prefix + "client"] = dict(session.stretches.figures())
                except Exception as e:  # noqa: BLE001
                    status, value = "raised", f"after the program: {type(e).__name__}: {e}"
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            try:
                session.close()
            except Exception:  # noqa: BLE001
                pass
        sides[side] = (status, value)
        row[f"{side}_s"] = round(time.perf_counter() - t0, 3)
    if numpy_too or local is not np:   # (the "numpy" side: the local module, NumPy or CuPy)
        with np.errstate(all="ignore"):
            sides["numpy"] = run_side(fn, n, local, timeout)
    on = sides["on"]
    row["status"] = {k: v[0] for k, v in sides.items()}
    row["problems"] = []
    for side, value in sides.items():
        if value[0] != "ok":
            row["problems"].append(f"{side} {value[0]}: {value[1]}")
    if on[0] == "ok" and sides["measured"][0] == "ok":   # (the defaults: replay measured)
        diff = first_difference(sides["measured"][1], sides["off"][1]
                                if sides["off"][0] == "ok" else on[1])
        row["measured_equal"] = diff is None
        if diff:
            row["problems"].append(f"measured != off {diff}")
    else:
        row["measured_equal"] = False
    for other in ("off", "numpy"):
        if other not in sides:
            row[f"equal_{other}"] = None
            continue
        if on[0] == "ok" and sides[other][0] == "ok":
            diff = first_difference(on[1], sides[other][1])
            row[f"equal_{other}"] = diff is None
            if diff:
                row["problems"].append(f"on != {other} {diff}")
        else:
            row[f"equal_{other}"] = False
    if "numpy" in sides and sides["off"][0] == "ok" and sides["numpy"][0] == "ok":
        row["off_equal_numpy"] = first_difference(sides["off"][1], sides["numpy"][1]) is None
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="", help="comma-separated names (all by default)")
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--scale", type=float, default=1.0, help="iterations times this")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds a side may take")
    parser.add_argument("--local", choices=("numpy", "cupy"), default="numpy",
                        help="the module of the third side (cupy: local CuPy on a GPU host)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    local = np
    if args.local == "cupy":
        import cupy as local  # noqa: F811
    warnings.simplefilter("ignore")   # (NaN, inf, overflow: the programs mean them)
    names = [n for n in args.programs.split(",") if n] or list(PROGRAMS)
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)}")

    from gpu_backend.pool import LocalPool

    rows = []
    t_start = time.perf_counter()
    with LocalPool(devices=args.devices, memory_limit=1 << 28) as pool:
        for name in names:
            fn, iters, numpy_too = PROGRAMS[name]
            n = max(50, int(iters * args.scale))
            row = run_program(pool, name, fn, n, numpy_too, args.timeout, local)
            rows.append(row)
            w, c = row.get("worker", {}), row.get("client", {})
            print(f"{name:34s} n={n:4d} replays={w.get('replays', '-'):>4} "
                  f"graphed={w.get('graphed', '-'):>4} ahead={w.get('ahead', '-'):>4} "
                  f"off={_yn(row['equal_off'])} {args.local}={_yn(row['equal_numpy'])} "
                  f"measured={_yn(row['measured_equal'])} "
                  f"({row['on_s']:.1f}s)", flush=True)
            for p in row["problems"]:
                print("    " + p.replace("\n", "\n    "), flush=True)

    print()
    head = (f"{'program':34s} {'iters':>5} {'replays':>7} {'graphed':>7} {'ahead':>5} "
            f"{'fast':>5} {'early':>5} {'undone':>6} {'fallbk':>6} {'=off':>4} {'=' + args.local:>6} "
            f"{'measured: replays':>17} {'=off':>4}")
    print(head)
    print("-" * len(head))
    for row in rows:
        w, c = row.get("worker", {}), row.get("client", {})
        print(f"{row['program']:34s} {row['iterations']:>5} {w.get('replays', '-'):>7} "
              f"{w.get('graphed', '-'):>7} {w.get('ahead', '-'):>5} {c.get('fast', '-'):>5} "
              f"{c.get('early', '-'):>5} {c.get('early_undone', '-'):>6} "
              f"{w.get('fallbacks', '-'):>6} {_yn(row['equal_off']):>4} "
              f"{_yn(row['equal_numpy']):>6} "
              f"{row.get('measured_worker', {}).get('replays', '-'):>17} "
              f"{_yn(row['measured_equal']):>4}")
    failed = [r["program"] for r in rows if r["problems"]]
    idle = [r["program"] for r in rows
            if not r.get("worker", {}).get("graphed") and not r.get("worker", {}).get("ahead")]
    print(f"\n{len(rows)} programs, {len(failed)} with problems: {', '.join(failed) or 'none'}")
    print(f"no replay graphed or run ahead: {', '.join(idle) or 'none'}")
    print(f"{time.perf_counter() - t_start:.1f} s in all")
    emit({"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
          "devices": args.devices, "local": args.local,
          "environment": {k: os.environ[k] for k in ("GPUWB_RUN_AHEAD_US", "GPUWB_READ_AHEAD_US")},
          "programs": rows, "with_problems": failed, "not_engaged": idle}, args.json)
    return 1 if failed else 0


def _yn(v: Any) -> str:
    return "-" if v is None else ("yes" if v else "NO")


if __name__ == "__main__":
    sys.exit(main())
