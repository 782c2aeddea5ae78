"""Issue 50's speed targets on loops no benchmark was tuned for: every loop of the correctness
campaign (benchmarks/unseen_loops.py, ``unseen_programs.PROGRAMS``) timed through the pool
against local CuPy in the same process, side by side.

    python benchmarks/unseen_speed.py [--programs a,b] [--campaigns draws,uploads]
        [--devices auto] [--rounds 3] [--budget 200] [--json out.json]

``programs.py`` times the programs issue 50 names and those written for it since; each was
looked at, and the worker learnt its shape. These loops were written to find wrong results
(each is a loop of 50 or more iterations a notebook might hold: draws, uploads, moving
slices, scalars through calls, eager ops between graphs), never timed. So their ratios say
what a user whose loop nobody has seen gets.

Each program runs on a fresh session with a session's defaults (replay measured, a stretch
whose replays are not faster let go), alone on its device in one pool, and on the local
module (CuPy on a GPU host; NumPy elsewhere, where the ratio says nothing of a GPU): one
warm-up each (kernels compiled, stretches held), then ``--rounds`` rounds alternating which
side goes first, each timed to the device's end (``session.sync(device=True)``, the local
stream synchronised). The ratio is the proxy's median over local's. The last results are
compared bit for bit (the campaign's own comparison); a program NumPy does not define the
same (the pool's draws are CuPy's) is compared only against CuPy. A program the local module
cannot run (an argument CuPy does not take) is listed, not timed, and is no failure.

Prints a line per program, the table by ratio (the worst first, with how its messages were
served: replays, the worker's steady lane, pushes, the client's fast path, the downloads a
replay's reply brought before they were asked for), the count at
or under 0.5x (issue 50's target for a loop of >= 20 iterations) and 1.0x, by campaign, then
one JSON object (also written to ``--json``). Exits 1 where a program failed or differed.
With ``--budget``, no program is begun once that many seconds have passed: the table and
the JSON hold those timed, and ``not_begun`` names the rest (for a second call by
``--programs``), where a GPU run's time limit would have lost them all.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from json_out import emit  # noqa: E402
from programs import finish, local_module  # noqa: E402
from served_pool import open_pool  # noqa: E402
from unseen_programs import CAMPAIGN_OF, PROGRAMS, first_difference, run_side  # noqa: E402

#: issue 50's targets: a loop of >= 20 iterations at most this times local, any program 1.0
LOOP_TARGET, TARGET = 0.5, 1.0


def timed(fn, n: int, xp, session, timeout: float) -> tuple[str, object, float]:
    """One run of *fn* to the device's end: its status, its result (or error) and seconds."""
    start = time.perf_counter()
    status, value = run_side(fn, n, xp, timeout)
    if status == "ok":
        try:
            finish(xp, session)
        except Exception as e:  # noqa: BLE001
            status, value = "raised", f"at its end: {type(e).__name__}: {e}"
    return status, value, time.perf_counter() - start


def run_program(pool, name: str, rounds: int, local, comparable: bool, timeout: float) -> dict:
    """*name* on a fresh session and on *local*: a warm-up each, then *rounds* alternating."""
    import kernelproxy
    from kernelproxy.modules import module_for

    fn, n, numpy_too = PROGRAMS[name]
    row: dict = {"program": name, "campaign": CAMPAIGN_OF[name], "iterations": n,
                 "problems": []}
    session = kernelproxy.connect(pool.local_address or pool.address, pool.token)
    try:
        sides = {"local": (local, None), "proxy": (module_for(session), session)}
        times: dict[str, list] = {"local": [], "proxy": []}
        last: dict[str, object] = {}
        counted = None   # (the session's messages and replays, from the first timed round)
        for turn in range(rounds + 1):   # (the first a warm-up, untimed)
            if turn == 1:
                counted = (session._batch, _replays(session))
            order = ("local", "proxy") if turn % 2 == 0 else ("proxy", "local")
            for side in order:
                xp, s = sides[side]
                status, value, seconds = timed(fn, n, xp, s, timeout)
                if status != "ok" and side == "local":   # (a program of CuPy's alone, or
                    row["local_cannot"] = f"{status}: {value}"   # of NumPy's: not timed)
                    return row
                if status != "ok":
                    row["problems"].append(f"{side} {status}: {value}")
                    return row
                last[side] = value
                if turn:
                    times[side].append(seconds)
        row["local_ms"] = statistics.median(times["local"]) * 1e3
        row["proxy_ms"] = statistics.median(times["proxy"]) * 1e3
        row["ratio"] = row["proxy_ms"] / row["local_ms"]
        row["calls"] = {k: [round(t * 1e3, 3) for t in v] for k, v in times.items()}
        info = session.memory_info()
        worker = dict(info.get("stretches") or {})
        client = dict(session.stretches.figures()) if session.stretches is not None else {}
        row["served"] = {"replays": worker.get("replays", 0), "graphed": worker.get("graphed", 0),
                         "lane": worker.get("lane", 0),
                         "pushed": worker.get("pushed", 0), "ahead": worker.get("ahead", 0),
                         "fast": client.get("fast", 0), "released": client.get("released", 0),
                         # (downloads sent with a replay's reply, and those a download took)
                         "prefetched": info.get("prefetched", 0),
                         "prefetch_hits": session.trailing.figures()["hits"]}
        # (a timed iteration's messages, and of them replays of held stretches: a message
        # that is no replay is a round trip the generic path serves)
        runs = rounds * n
        row["messages_an_iteration"] = round((session._batch - counted[0]) / runs, 3)
        row["replays_an_iteration"] = round((_replays(session) - counted[1]) / runs, 3)
        row["why"] = {"held": client.get("held", 0), "refused": client.get("refused", 0),
                      "not_graphed": client.get("not_graphed", 0),
                      "never_graphed": worker.get("never_graphed", {}),
                      "lane_left": worker.get("lane_left_why", {}),
                      "lane_declined": worker.get("lane_declined", {})}
        if comparable or numpy_too:
            diff = first_difference(last["proxy"], last["local"])
            row["equal"] = diff is None
            if diff:
                row["problems"].append(f"proxy != local {diff}")
        else:
            row["equal"] = None
    finally:
        try:
            session.close()
        except Exception:  # noqa: BLE001
            pass
    return row


def _replays(session) -> int:
    """The replays of held stretches the session's client has had answered."""
    return session.stretches.replays if session.stretches is not None else 0


def summary(rows: list) -> dict:
    """The counts at or under the targets and the ratios' spread, all and by campaign."""
    def of(group: list) -> dict:
        ratios = sorted(r["ratio"] for r in group if "ratio" in r)
        if not ratios:
            return {"programs": len(group), "timed": 0}
        return {"programs": len(group), "timed": len(ratios),
                "at_most_loop_target": sum(r <= LOOP_TARGET for r in ratios),
                "at_most_1": sum(r <= TARGET for r in ratios),
                "median": round(statistics.median(ratios), 3),
                "p90": round(ratios[min(len(ratios) - 1, int(0.9 * len(ratios)))], 3),
                "worst": round(ratios[-1], 3)}
    out = {"all": of(rows)}
    for campaign in dict.fromkeys(r["campaign"] for r in rows):
        out[campaign] = of([r for r in rows if r["campaign"] == campaign])
    return out


def table(rows: list, stats: dict, local_kind: str) -> str:
    lines = [f"{'program':36s} {'campaign':13s} {'iters':>5s} {'local ms':>9s} {'proxy ms':>9s} "
             f"{'x local':>7s} {'msgs/it':>7s} {'replays':>7s}  served (replays graphed lane "
             f"pushed ahead fast released prefetch-hits)"]
    timed_rows = sorted((r for r in rows if "ratio" in r), key=lambda r: -r["ratio"])
    for r in timed_rows:
        s = r["served"]
        lines.append(f"{r['program']:36s} {r['campaign']:13s} {r['iterations']:5d} "
                     f"{r['local_ms']:9.2f} {r['proxy_ms']:9.2f} {r['ratio']:7.2f} "
                     f"{r['messages_an_iteration']:7.2f} {r['replays_an_iteration']:7.2f}  "
                     f"{s['replays']} {s['graphed']} {s['lane']} {s['pushed']} {s['ahead']} {s['fast']} "
                     f"{s['released']} {s['prefetch_hits']}")
    lines.append("")
    lines.append(f"{'campaign':14s} {'programs':>8s} {'<=0.5x':>6s} {'<=1.0x':>6s} "
                 f"{'median':>7s} {'p90':>6s} {'worst':>6s}   (x local {local_kind})")
    for campaign, s in stats.items():
        if s.get("timed"):
            lines.append(f"{campaign:14s} {s['timed']:8d} {s['at_most_loop_target']:6d} "
                         f"{s['at_most_1']:6d} {s['median']:7.2f} {s['p90']:6.2f} "
                         f"{s['worst']:6.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="", help="comma-separated names (all by default)")
    parser.add_argument("--campaigns", default="",
                        help="only these campaigns: " + ",".join(dict.fromkeys(CAMPAIGN_OF.values())))
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--policy", default="share")
    parser.add_argument("--served", action="store_true",
                        help="the pool in a process of its own (gpuwb-backend serve)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a run may take")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds the whole call may take: no program is begun past them, "
                             "the ones left are named (a GPU run's time limit then keeps the table)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    names = [n for n in args.programs.split(",") if n] or list(PROGRAMS)
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)}")
    if args.campaigns:
        names = [n for n in names if CAMPAIGN_OF[n] in args.campaigns.split(",")]
    warnings.simplefilter("ignore")   # (NaN, inf, overflow: the programs mean them)

    local, local_kind = local_module()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
              "python": sys.version.split()[0], "local_kind": local_kind,
              "policy": args.policy, "rounds": args.rounds}
    if local_kind == "cupy":
        props = local.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        result["gpu"] = name.decode() if isinstance(name, bytes) else name
    rows = []
    started = time.perf_counter()
    with open_pool(args.policy, args.devices, args.served) as pool:
        result["pool_device"] = args.devices
        left: list[str] = []
        for k, name in enumerate(names):
            if args.budget is not None and time.perf_counter() - started > args.budget:
                left = names[k:]
                break
            with np.errstate(all="ignore"):
                row = run_program(pool, name, args.rounds, local, local_kind == "cupy",
                                  args.timeout)
            rows.append(row)
            shown = (f"{row['ratio']:.2f}x ({row['proxy_ms']:.2f} / {row['local_ms']:.2f} ms)"
                     if "ratio" in row else "not timed: " + row.get("local_cannot", "a problem")
                     .split("\n")[0] if "local_cannot" in row else "not timed")
            print(f"{name:36s} {shown}", flush=True)
            for problem in row["problems"]:
                print("    " + problem.replace("\n", "\n    "), flush=True)
    stats = summary(rows)
    print()
    print(table(rows, stats, local_kind))
    failed = [r["program"] for r in rows if r["problems"]]
    untimed = [r["program"] for r in rows if "local_cannot" in r]
    print(f"\n{len(rows)} programs, {len(failed)} with problems: {', '.join(failed) or 'none'}")
    print(f"the local module cannot run {len(untimed)}: {', '.join(untimed) or 'none'}")
    if left:
        print(f"not begun, past the budget of {args.budget:g} s: {len(left)} programs, from {left[0]}")
    print(f"{time.perf_counter() - started:.1f} s in all")
    emit({**result, "summary": stats, "programs": rows, "with_problems": failed,
          "local_cannot": untimed, "not_begun": left}, args.json)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
