"""Why an interactive request was slow: its latency beside what the arbiter decided meanwhile.

    GPUWB_PACING_TRACE=DIR python benchmarks/fairness.py ... --scenarios interactive+2
    python benchmarks/fairness_why.py DIR/fair-interactive+2 [--slower-than 5] [--json out]

``fairness.py`` run with ``GPUWB_PACING_TRACE`` keeps, per policy, the arbiter's decision
log (``DIR/<policy>-arbiter.jsonl``: every message it acted on, its answer, and for a
request its view of the users' virtual times) and, per scenario, the workers' pacing
traces (their grants, yields read, garbage collections, segments) and the interactive
user's requests (``i-requests.json``: issued at, latency). This
joins them: for every request it finds the interactive session's ``want`` and classifies
how the arbiter answered (granted with the device free, granted by stopping the holder at
once, or made to wait; "no request" where the session still held the device), and what
happened until the request ended. Printed: latency
percentiles per class; where the time of the requests went (client to worker, the
arbiter's answer and the baton, a preempted holder reading its yield, the request's own
work and reply); and for each request slower than the threshold the decisions in its
window with the virtual times the policy compared, beside the workers' own events.
"""

from __future__ import annotations

import argparse
import bisect
import json
from pathlib import Path


def load(folder: Path, user: str = "i") -> tuple[list, list]:
    """The requests (issued, latency) of *user* and the arbiter's decisions of the policy."""
    requests = json.loads((folder / f"{user}-requests.json").read_text())
    # <policy>-<scenario>, where both may hold dashes ("fair-q5-big-vs-small"): the longest
    # policy whose log is there
    parts = folder.name.split("-")
    logs = [folder.parent / f"{'-'.join(parts[:n])}-arbiter.jsonl" for n in range(len(parts) - 1, 0, -1)]
    log = next((path for path in logs if path.exists()), logs[-1])
    decisions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    decisions.sort(key=lambda d: d["t"])
    return list(zip(requests["issued"], requests["latencies"])), decisions


def load_workers(folder: Path) -> list[tuple[float, str, str, str]]:
    """The workers' own events from their pacing traces (``<user>-<pid>.jsonl``), as (time,
    user, kind, text): a grant taken (after the baton), a yield read, a garbage collection of a
    millisecond or more, a segment of a millisecond or more of the device's time. What the
    arbiter decided is not what a worker did when: a yield read 3 ms late, or a pause with
    neither a message nor device work in it, shows only here."""
    events = []
    for path in sorted(folder.glob("*.jsonl")):
        user = path.name.rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            kind = entry[1]
            if kind == "grant":
                text = "holds the device" + (" (others wait)" if entry[2] else "")
            elif kind == "yield":
                text = "reads a yield"
            elif kind == "gc":
                if entry[3] < 1e-3:
                    continue
                text = f"garbage collection (generation {entry[2]}) {entry[3] * 1e3:.1f} ms"
            elif type(kind) is int and entry[2] >= 1e-3:
                kind, text = "segment", f"segment of {kind} ops: {entry[2] * 1e3:.2f} ms of device time"
            else:
                continue
            events.append((entry[0], user, kind, text))
    events.sort()
    return events


def phases(joined: list[dict], workers: list, user: str = "i") -> dict[str, list[float]]:
    """Where each request's time went (ms), for the requests that asked for the device:
    ``issue→want`` (the client's message reaching the worker, which asks), ``want→holds``
    (the arbiter's answer, and the baton: the last holder's work draining), ``want→yield
    read`` (a preempted holder learning it) and ``holds→answer`` (the request's own ops,
    and its reply reaching the client)."""
    times = [e[0] for e in workers]
    out: dict[str, list[float]] = {k: [] for k in (
        "issue→want", "want→holds", "want→yield read", "holds→answer")}
    for r in joined:
        want = r["want"]
        if want is None:
            continue
        end = r["issued"] + r["ms"] / 1e3
        out["issue→want"].append((want["t"] - r["issued"]) * 1e3)
        after = workers[bisect.bisect_left(times, want["t"]):bisect.bisect_right(times, end)]
        holds = next((e[0] for e in after if e[1] == user and e[2] == "grant"), None)
        if holds is not None:
            out["want→holds"].append((holds - want["t"]) * 1e3)
            out["holds→answer"].append((end - holds) * 1e3)
        stopped = [a["session"] for a in want["actions"] if a["a"] == "yield"]
        if r["answer"] == "preempted":
            holder = next((d["user"] for d in r["window"] if d["session"] == stopped[0]), None)
            read = next((e[0] for e in after if e[1] == holder and e[2] == "yield"), None)
            if read is not None:
                out["want→yield read"].append((read - want["t"]) * 1e3)
    return out


def how_answered(entry: dict) -> str:
    """How the arbiter answered a request: ``free`` (granted, nobody held the device),
    ``preempted`` (granted, the holder stopped at once) or ``waited`` (fairness.py counts
    these per user)."""
    granted = any(a["a"] == "grant" and a["session"] == entry["session"] for a in entry["actions"])
    stopped = any(a["a"] == "yield" and not a["after"] and not a["batch_end"]
                  for a in entry["actions"])
    return "preempted" if granted and stopped else "free" if granted else "waited"


def join(requests: list, decisions: list, user: str = "i") -> list[dict]:
    """Each request with the decisions made between its issue and its end."""
    times = [d["t"] for d in decisions]
    out = []
    for issued, latency in requests:
        lo, hi = bisect.bisect_left(times, issued), bisect.bisect_right(times, issued + latency)
        window = decisions[lo:hi]
        want = next((d for d in window if d["user"] == user and d["msg"].get("t") == "want"), None)
        out.append({"issued": issued, "ms": latency * 1e3,
                    "answer": how_answered(want) if want else "no request",
                    "want": want, "window": window})
    return out


def _pct(values: list, q: float) -> float | None:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def describe(entry: dict, start: float) -> str:
    """One decision as a line: when (ms into the request), who, what, and the answer."""
    msg = entry["msg"]
    what = msg.get("t")
    if what in ("used", "release"):
        what += f" busy={msg.get('busy', 0):.4f}" + (" want" if msg.get("want") else "")
    answer = ", ".join(
        f"{a['a']}→{a['session'][:6]}" + (f" after={a['after'] * 1e3:.2f}ms" if a["a"] == "yield" else "")
        + (" q" if a["a"] == "grant" and a.get("quantum") else "")
        for a in entry["actions"])
    line = f"  +{(entry['t'] - start) * 1e3:7.2f} ms  {entry['user'] or '?':>3} {what:28} {answer}"
    state = entry.get("state")
    if state:
        vts = " ".join(f"{u}={v['vt'] * 1e3:.2f}{'*' if v['holding'] else ''}"
                       f"{'' if v['runnable'] else '(idle)'}" for u, v in sorted(state["users"].items()))
        line += f"\n{'':16}vt ms: {vts}; min_vt={state.get('min_vt', 0) * 1e3:.2f} told={state['told']}"
    return line


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="DIR/<policy>-<scenario> kept by fairness.py")
    parser.add_argument("--user", default="i")
    parser.add_argument("--slower-than", type=float, default=5.0, help="ms; requests to detail")
    parser.add_argument("--most", type=int, default=12, help="detail at most this many")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    requests, decisions = load(args.folder, args.user)
    joined = join(requests, decisions, args.user)
    summary = {}
    print(f"{'answer':12} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for answer in ("free", "preempted", "waited", "no request"):
        ms = [r["ms"] for r in joined if r["answer"] == answer]
        if ms:
            summary[answer] = {"n": len(ms), "p50": _pct(ms, 0.5), "p99": _pct(ms, 0.99), "max": max(ms)}
            print(f"{answer:12} {len(ms):5d} {_pct(ms, 0.5):8.2f} {_pct(ms, 0.99):8.2f} {max(ms):8.2f}")
    workers = load_workers(args.folder)
    spent = phases(joined, workers, args.user)
    print(f"\n{'where the time went':20} {'n':>5} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for name, ms in spent.items():
        if ms:
            summary[name] = {"n": len(ms), "p50": _pct(ms, 0.5), "p90": _pct(ms, 0.9), "p99": _pct(ms, 0.99)}
            print(f"{name:20} {len(ms):5d} {_pct(ms, 0.5):8.2f} {_pct(ms, 0.9):8.2f} {_pct(ms, 0.99):8.2f}")
    slow = sorted((r for r in joined if r["ms"] > args.slower_than), key=lambda r: -r["ms"])
    times = [e[0] for e in workers]
    print(f"\n{len(slow)} requests slower than {args.slower_than} ms; the slowest "
          "(arbiter decisions, and the workers' own events in brackets):")
    for r in slow[:args.most]:
        print(f"\n{r['ms']:.2f} ms, {r['answer']}:")
        end = r["issued"] + r["ms"] / 1e3
        lines = [(d["t"], describe(d, r["issued"])) for d in r["window"]]
        lines += [(t, f"  +{(t - r['issued']) * 1e3:7.2f} ms  [{user:>3} {text}]")
                  for t, user, _kind, text in workers[bisect.bisect_left(times, r["issued"]):
                                               bisect.bisect_right(times, end)]]
        for _, line in sorted(lines, key=lambda x: x[0]):
            print(line)
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "slow": [
            {k: v for k, v in r.items() if k != "window"} | {"decisions": len(r["window"])}
            for r in slow]}, indent=1, default=str))


if __name__ == "__main__":
    main()
