"""Fair share on one GPU: the pool's policies side by side, in one run.

    python benchmarks/fairness.py [--seconds 15] [--policies none,fair,share] [--scenarios ...]
                                  [--json out.json] [--plot out.png] [--quick]

By default every scenario below runs, the long-kernel ones among them (each one the
documents quote: docs/fair-share.md, docs/performance.md); ``--quick`` runs every one for
4 s, ``--scenarios`` names some.

By default every scenario runs under the first policy, then every one under the next.
``--interleave`` opens every policy's pool at once and runs each scenario under every policy
back to back, the policies' order rotated from one scenario to the next (``--rotate K`` starts
it K places on): a scenario's runs under two policies are then seconds apart, not minutes,
and the GPU's drift meanwhile falls on neither (runs 331-332: one policy's own work moved by
up to 0.05 between passes). Two passes, ``--rotate 0`` and ``--rotate 1``, run each
scenario in both orders.

For each policy a pool (``gpuwb-backend serve --policy P``) runs on the GPU,
and each scenario starts its clients as separate processes, each with its own
user (token) and session. The scenarios: fairness_scenarios.py (``--help`` lists them).

Every scenario is judged from the users' side: each user's normalised rate (its rate over
its rate alone, measured alone in the same run), their sum (work conservation), the share
error of the normalised rates against the weights, the interactive user's latency.

GEMM clients keep their session backlogged: they send K GEMMs (about 10 ms of
work alone, from the workload's exclusive rate: the same K for every user and
policy) and a fence (the value of one element) and read the fence before
last, so the GPU never waits for the client. Completed GEMMs over time give each user's rate, divided
by its rate alone (measured first, under policy ``none``): its normalised rate.
A user's share in a window is its normalised rate over the sum of all users'.

Reported per scenario and policy: share error |measured − target| / target over
100 ms, 1 s and 10 s windows (mean and p99 over windows and users), weighted
Jain's index over the whole run, work conservation (sum of normalised rates),
interactive latency p50/p99/p99.9 (and alone), convergence time after each
change (the first 100 ms window from which three in a row are within 10 % of
the new targets). Prints a table and JSON; writes a PNG of the shares over
time with ``--plot`` (matplotlib). Then a verdict on each of issues 7 and 38's targets for every
``fair`` policy, each miss with its size and the run's own figures that explain it
(``fairness_targets.py``): for that the pool's usage log gives each user's device time and
the share of the time anyone was charged, and ``nvidia-smi`` the SM clock alone and in
each scenario.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from fairness_report import cumulative, percentile, analyse, normalising_rates, plot, table  # noqa: E402  (beside this file)
from fairness_targets import targets_table, verdicts  # noqa: E402
from fairness_clients import FENCE_SECONDS, client_main, wait_until  # noqa: E402
from fairness_why import how_answered  # noqa: E402
from fairness_variants import policy_variant  # noqa: E402
from gpu_clock import ClockSampler  # noqa: E402
from served_pool import ServedPool  # noqa: E402

BIG = (6144, "float16")      # one GEMM ~0.6-0.8 ms on an H100/H200: "ops of at most 1 ms"
SMALL = (1024, "float32")    # ~40-60 µs
LONG = (12288, "float32")    # ~70 ms: one kernel far longer than a quantum
TRAIN = (4096, "float32")    # the training step's batch rows (its layers a quarter as wide)
MID = (2048, "float32")      # ~0.3 ms: the saturating user beside the interactive one (issue 51)
SYNC = (4096, "float32")     # ~2 ms: users that sync every few ms, four GEMMs a read (issue 51)
SYNC_LONG = (8192, "float32")   # ~20 ms, one GEMM a read, beside SMALL four a read (issue 51)
#: GEMMs between two reads of one element, per syncing kind
PER_SYNC = {"sync": 4, "longsync": 1, "smallsync": 4}
#: how long the driver waits, past the planned start, for every client to warm up
READY_WAIT = 300.0
#: where a client warmed up after the planned start (a loaded machine, a slow import), every
#: client's start moves to this long after the last one did: they run together, as planned
READY_MARGIN = 0.5

import fairness_scenarios  # noqa: E402  (beside this file)
from fairness_scenarios import DEFAULT_SCENARIOS, NOT_WORK, SCENARIOS, USERS  # noqa: E402,F401


# --------------------------------------------------------------------------- the pool

class Pool:
    """``gpuwb-backend serve`` in a subprocess with a users file we write."""

    def __init__(self, policy: str, devices: str, workdir: Path, weights: dict) -> None:
        from gpu_backend.accounting.users import User, hash_token, new_token, save_users
        policy, tag, variant_env, served_args = policy_variant(policy)
        self.tag = tag
        self.users_file = workdir / f"users-{tag}.toml"
        self.tokens = {name: new_token(name) for name in USERS}
        self._hashes = {name: hash_token(tok) for name, tok in self.tokens.items()}
        self._User, self._save = User, save_users
        self.set_weights(weights)
        self.log = workdir / f"usage-{tag}.jsonl"
        self.trace_dir = None
        if os.environ.get("GPUWB_PACING_TRACE"):   # one folder per pool: the workers' traces
            self.trace_dir = Path(os.environ["GPUWB_PACING_TRACE"]) / tag
            self.trace_dir.mkdir(parents=True, exist_ok=True)
        env, self.decisions = dict(variant_env), None
        if self.trace_dir is not None:   # ... and the arbiter's decisions beside them
            self.decisions = self.trace_dir.parent / f"{tag}-arbiter.jsonl"
            env.update({"GPUWB_PACING_TRACE": str(self.trace_dir),
                        "GPUWB_ARBITER_TRACE": str(self.decisions)})
        self.served = ServedPool(policy, devices, "--spare-workers", "4", *served_args,
                                 users_file=self.users_file, env=env, usage_log=self.log)
        self.address = self.served.address

    def set_weights(self, weights: dict) -> None:
        users = {name: self._User(name=name, token_hash=self._hashes[name],
                                  weight=float(weights.get(name, 1)))
                 for name in USERS}
        self._save(self.users_file, users)

    def charged(self, t0: float, t1: float) -> dict[str, float]:
        """Device seconds the pool charged each user between two wall-clock times (its usage
        log; reports come every 0.5 s, so the edges are that coarse)."""
        time.sleep(1.5)   # the last reports, flushed
        out: dict[str, float] = {}
        for line in self.log.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("t") == "use" and t0 <= r.get("ts", 0) <= t1 and "device_s" in r:
                out[r["user"]] = out.get(r["user"], 0.0) + r["device_s"]
        return out

    def busy(self, t0: float, t1: float) -> dict[str, float]:
        return busy_from_log(self.log, t0, t1)

    def stop(self) -> None:
        self.served.stop()


def busy_from_log(log: Path, t0: float, t1: float) -> dict[str, float]:
    """Per user, the fraction of the time between two wall-clock times that the pool
    charged it device time, from the pool's usage log. A ``use`` line's device seconds are
    those since the session's previous line (or its opening), so each session's share is
    taken over exactly the span its lines in the window cover, not the window's edges,
    which the reports (every 0.5 s) make coarse."""
    last: dict[str, float] = {}   # session -> its latest line so far
    spans: dict[str, list] = {}    # session -> [user, device s, first covered, last]
    for line in log.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        sid, ts = r.get("session"), r.get("ts", 0)
        if r.get("t") == "use" and t0 <= ts <= t1 and sid in last:
            span = spans.setdefault(sid, [r["user"], 0.0, last[sid], ts])
            span[1] += r.get("device_s", 0.0)
            span[3] = ts
        if r.get("t") in ("open", "use"):
            last[sid] = ts
    out: dict[str, float] = {}
    for user, device_s, first, end in spans.values():
        if end > first:
            out[user] = out.get(user, 0.0) + device_s / (end - first)
    return out


# --------------------------------------------------------------------------- a scenario

def run_clients(specs: list[dict], workdir: Path, events=()) -> tuple[list[dict], float]:
    """Run the clients of *specs* to their end: their results, and the seconds their start
    and stop moved by (0 where every client warmed up before the planned start; else the
    start is READY_MARGIN after the last one did: :func:`_go_when_warm`)."""
    procs = [subprocess.Popen([sys.executable, __file__, "--client", json.dumps(s)])
             for s in specs]
    try:
        offset = _go_when_warm(specs, procs)
    except BaseException:
        for proc in procs:
            proc.kill()
        raise
    for when, action in events:   # mid-run changes (weights), at absolute monotonic times
        wait_until(when + offset)
        action()
    results = []
    for spec, proc in zip(specs, procs):
        if proc.wait(spec["stop"] + offset - time.monotonic() + 120) != 0:
            raise RuntimeError(f"client {spec['user']} failed (exit {proc.returncode})")
        results.append(json.loads(Path(spec["out"]).read_text()))
    return results, offset


def _go_when_warm(specs: list[dict], procs: list) -> float:
    """Wait until every client has warmed up (its ``ready`` file), then give them the go
    (each one's ``go`` file, written whole): the seconds their start and stop move by."""
    planned = min(s["start"] for s in specs)
    deadline = planned + READY_WAIT
    while not all(Path(s["ready"]).exists() for s in specs):
        for spec, proc in zip(specs, procs):
            if proc.poll() is not None:
                raise RuntimeError(f"client {spec['user']} ended before it warmed up "
                                   f"(exit {proc.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the clients did not warm up within {READY_WAIT:g} s of the "
                               "planned start")
        time.sleep(0.01)
    offset = max(0.0, time.monotonic() + READY_MARGIN - planned)
    for spec in specs:
        partial = Path(spec["go"] + ".part")
        partial.write_text(repr(offset))
        partial.rename(spec["go"])
    return offset


def spec_for(user: str, kind: str, pool, exclusive: dict, start: float, stop: float,
             workdir: Path, local: bool) -> dict:
    n, dtype = {"big": BIG, "small": SMALL, "long": LONG, "train": TRAIN, "mid": MID,
                "sync": SYNC, "longsync": SYNC_LONG, "smallsync": SMALL}.get(kind, (0, ""))
    rate = exclusive.get(kind, {}).get("rate")
    name = f"{user}-{kind}-{time.monotonic_ns()}"
    return {"user": user, "kind": kind, "n": n, "dtype": dtype, "local": local,
            "per_sync": PER_SYNC.get(kind),
            # the same work between fences for every user and policy: ~10 ms alone
            "per_fence": max(1, min(4000, round(FENCE_SECONDS * rate))) if rate else None,
            "address": None if local else pool.address,
            "token": None if local else pool.tokens[user],
            "start": start, "stop": stop,
            "out": str(workdir / f"{name}.json"), "ready": str(workdir / f"{name}.ready"),
            "go": str(workdir / f"{name}.go")}


def scenario(name: str, pool, exclusive: dict, seconds: float, workdir: Path, local: bool,
             lead: float, clocks: ClockSampler | None = None) -> dict:
    start = time.monotonic() + lead
    stop = start + seconds
    members = SCENARIOS[name]
    weights = {user: w for user, _kind, w in members}
    events = []
    if name == "dynamics":
        weights = {"a": 1, "b": 1, "c": 1}
        quarter = seconds / 4
        specs = [spec_for("a", "big", pool, exclusive, start, stop, workdir, local),
                 spec_for("b", "big", pool, exclusive, start, stop, workdir, local),
                 spec_for("c", "big", pool, exclusive, start + quarter, start + 2 * quarter,
                          workdir, local)]
        if pool is not None:
            pool.set_weights(weights)
            events = [(start + 3 * quarter - 1.0, lambda: pool.set_weights({"a": 3, "b": 1, "c": 1}))]
        phases = [(start, start + quarter, {"a": 1, "b": 1}),
                  (start + quarter, start + 2 * quarter, {"a": 1, "b": 1, "c": 1}),
                  (start + 2 * quarter, start + 3 * quarter, {"a": 1, "b": 1}),
                  (start + 3 * quarter, stop, {"a": 3, "b": 1})]
    else:
        if pool is not None:
            pool.set_weights(weights)
        specs = [spec_for(u, k, pool, exclusive, start, stop, workdir, local) for u, k, _ in members]
        phases = [(start, stop, {u: w for u, k, w in members if k not in NOT_WORK})]
    time.sleep(1.2)   # the pool reloads the users file within a second
    wall = time.time() - time.monotonic()
    results, moved = run_clients(specs, workdir, events)
    if moved:   # (a client warmed up after the planned start: every time moved with it)
        start, stop = start + moved, stop + moved
        phases = [(p0 + moved, p1 + moved, w) for p0, p1, w in phases]
    out = analyse(name, results, phases, exclusive, start, stop)
    out["start_moved_s"] = round(moved, 3)
    out["per_fence"] = {r["user"]: r["per_fence"] for r in results if "per_fence" in r}
    out["split"] = {r["user"]: r["split"] for r in results if r.get("split")}   # ops in pieces
    out["stretches"] = {r["user"]: {**r["stretches"], "client": r.get("client_stretches")}
                        for r in results if r.get("stretches")}
    p0, p1, _ = phases[0]
    settle = min(1.0, (p1 - p0) / 4)
    if clocks is not None:   # the GPU's clock and power over the first phase's steady part
        out["gpu_clock"] = clocks.between(wall + p0 + settle, wall + p1)
    if pool is not None:   # what the pool measured and charged, per GEMM (a diagnostic)
        charged = pool.charged(wall + p0 + settle, wall + p1)
        out["busy"] = pool.busy(wall + p0 + settle, wall + p1)
        done = {r["user"]: cumulative(r["points"], p1) - cumulative(r["points"], p0 + settle)
                for r in results if r["kind"] not in NOT_WORK}
        out["charged_s"] = charged
        out["charged_ms_per_gemm"] = {u: charged[u] / done[u] * 1e3
                                      for u in done if done[u] and u in charged}
        if pool.trace_dir is not None:
            t0 = wall + p0 + settle - time.time() + time.monotonic()
            # the raw traces stay beside the arbiter's log, one folder per scenario, with the
            # interactive user's requests (issued at, latency): a slow request and the
            # decisions around it can be read together
            kept = pool.trace_dir.parent / f"{pool.tag}-{name}"
            kept.mkdir(exist_ok=True)
            for r in results:
                if r["kind"] == "interactive":
                    (kept / f"{r['user']}-requests.json").write_text(
                        json.dumps({"issued": r["issued"], "latencies": r["latencies"]}))
            out["trace"] = summarise_traces(pool.trace_dir, t0, p1, keep=kept)
            if pool.decisions is not None and pool.decisions.exists():
                out["arrivals"] = summarise_arrivals(pool.decisions, t0, p1)
    return out


def summarise_arrivals(path: Path, t0: float, t1: float) -> dict:
    """Per user, from the arbiter's decisions (GPUWB_ARBITER_TRACE) between two monotonic
    times: how its requests for the device were answered. ``free``: nobody held it;
    ``preempted``: the holder was stopped at once for it (a user back from idle with credit);
    ``waited``: the holder was told to hand over after a quantum, or it queued behind one
    already told. An interactive user's tail comes from the last two kinds."""
    out: dict = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if not t0 <= entry["t"] <= t1 or entry["msg"].get("t") != "want":
            continue
        mine = out.setdefault(entry["user"], {"wants": 0, "free": 0, "preempted": 0, "waited": 0})
        mine["wants"] += 1
        mine[how_answered(entry)] += 1
    return out


def summarise_traces(folder: Path, t0: float, t1: float, keep: Path | None = None) -> dict:
    """Per user, from the workers' pacing traces (GPUWB_PACING_TRACE), between two monotonic
    times: grants; device seconds charged and the device's own time for the ops (the rest
    is time the device idled while the session held it); the mean own time of one-op
    segments longer than 0.1 ms (the GEMMs); the worker's garbage collections (how many,
    the longest, in all). Each trace is then moved to *keep* (or
    removed): the next scenario's workers write afresh."""
    out: dict = {}
    for path in sorted(folder.glob("*.jsonl")):
        user = path.name.rsplit("-", 1)[0]
        grants, charged, own, long_ops, pauses = 0, 0.0, 0.0, [], []
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if not t0 <= entry[0] <= t1:
                continue
            if entry[1] == "grant":
                grants += 1
                continue
            if entry[1] == "gc":
                pauses.append(entry[3] * 1e3)
                continue
            if type(entry[1]) is not int:   # a yield read
                continue
            charged += entry[3]
            own += entry[2]
            if entry[1] == 1 and entry[2] > 1e-4:
                long_ops.append(entry[2] * 1e3)
        if grants or charged:
            out[user] = {"grants": grants, "charged_s": charged, "own_s": own,
                         "idle_held_ms_per_grant": (charged - own) * 1e3 / grants if grants else None,
                         "long_op_ms": sum(long_ops) / len(long_ops) if long_ops else None,
                         "long_ops": len(long_ops),
                         "gc_pauses": len(pauses), "gc_ms_max": max(pauses, default=0.0),
                         "gc_ms_total": sum(pauses)}
        if keep is not None:
            path.rename(keep / path.name)
        else:
            path.unlink()
    return out


def calibrate(pool, seconds: float, workdir: Path, local: bool, kinds=("big", "small"),
              clocks: ClockSampler | None = None, lead: float = 3.0) -> dict:
    """Each workload alone: its exclusive rate (GEMMs/s) or latency, and the GPU's clock
    meanwhile."""
    exclusive = {}
    for kind in kinds:
        for attempt_lead in (lead, 4 * lead):
            # (a client that recorded too few points, on a loaded machine, is run once more
            # with a longer lead; its start waits for its warm-up in either: run_clients)
            start = time.monotonic() + attempt_lead
            spec = spec_for("solo", kind, pool, {}, start, start + seconds, workdir, local)
            wall = time.time() - time.monotonic()
            (r,), moved = run_clients([spec], workdir)
            start += moved
            pts = [p for p in r["points"] if p[0] >= start + 0.5]
            if len(pts) < 2 or pts[-1][0] <= pts[0][0]:   # (started late: all it did)
                pts = [p for p in r["points"] if p[0] >= start] or r["points"]
            if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
                break
        else:
            raise SystemExit(f"calibration: the {kind} workload alone recorded too few points "
                             f"({len(r['points'])}) in {seconds:g} s to give a rate: lengthen "
                             f"--calibrate-seconds or --lead")
        exclusive[kind] = {"rate": (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])}
        if clocks is not None:
            exclusive[kind]["gpu_clock"] = clocks.between(wall + start + 0.5, wall + start + seconds)
    start = time.monotonic() + lead
    (r,), _moved = run_clients([spec_for("i", "interactive", pool, {}, start, start + seconds,
                                         workdir, local)], workdir)
    lat = [v * 1e3 for v in r["latencies"][20:]]
    exclusive["interactive"] = {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99), "p999": percentile(lat, 0.999)}
    return exclusive


def drift_corrected(result: dict, members: list, before: dict, after: dict) -> float | None:
    """Work conservation against each workload's rate alone averaged over before and after
    the policy's scenarios (the GPU's rate alone drifts as it warms: an H100's fp16 GEMMs
    lost 10 % in one process's first minute)."""
    norm = result.get("normalised_rates") or {}
    kinds = {user: kind for user, kind, _w in members}
    total = 0.0
    for user, value in norm.items():
        kind = kinds.get(user)
        if kind not in after or kind not in before:
            return None
        total += value * before[kind]["rate"] / ((before[kind]["rate"] + after[kind]["rate"]) / 2)
    return total if norm else None


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, with ``--quick``'s durations applied and the scenarios to run as a
    list in ``names`` (every scenario unless ``--scenarios`` names some)."""
    parser = argparse.ArgumentParser(description=__doc__ + "\n" + fairness_scenarios.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--calibrate-seconds", type=float, default=5.0)
    parser.add_argument("--calibrate", default="none,fair,local",
                        help="policies whose pools measure each workload alone (rates are "
                             "normalised by none's, or the policy's own without none)")
    parser.add_argument("--recalibrate", action="store_true",
                        help="measure each GEMM workload alone again after each policy's "
                             "scenarios, on its pool: the GPU's own drift over the run shows, and "
                             "work conservation is also given against the mean of the rates alone "
                             "before and after (JSON: exclusive_after, work_conservation_drift)")
    parser.add_argument("--policies", default="none,fair,share",
                        help="comma list of none, fifo, fair, fair:MS (fair with every turn MS "
                             "milliseconds, no period), fair/MS (turns shared out of an MS-"
                             "millisecond period), fair+leadUS (workers holding back to US µs of launched "
                             "work, GPUWB_PACING_LEAD_US; any fair variant may end so), fair+patienceMS (a "
                             "preempting newcomer waits at most MS ms for the holder's launched work, "
                             "GPUWB_PREEMPT_PATIENCE_MS; after any +lead), fair+fixedpatience, "
                             "fair+nogap (the gap rule off), fair+split (long ops in 1 ms pieces), "
                             "fair+lateread (the device handed over after a batch's closing read, "
                             "not as it begins: the pool before issue 51), share, share+windowMS "
                             "(its window), share+fill (a user held back let into an anticipated user's "
                             "expected gap, GPUWB_SHARE_FILL=1; share+nofill: the default, named), "
                             "share+shareleadUS (a free-running session's lead beside "
                             "others, GPUWB_SHARE_LEAD_US), share+napUS (its hold-back's "
                             "longest sleep, GPUWB_SHARE_NAP_US; 0: none), any policy+pacedreplayUS (a held stretch's replay of US µs of "
                             "device time or more re-run op by op, paced, beside others: "
                             "GPUWB_UNPACED_REPLAY_US) and "
                             "local (plain CuPy processes)")
    parser.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                        help="comma list of: " + ", ".join(SCENARIOS))
    parser.add_argument("--interleave", action="store_true",
                        help="every policy's pool open at once, and each scenario run under "
                             "every policy back to back (its policies' order rotated from one "
                             "scenario to the next), instead of every scenario under one policy, "
                             "then under the next: a scenario's runs under two policies are then "
                             "seconds apart, not minutes, and the GPU's drift meanwhile (clock, "
                             "heat) does not fall on one policy (runs 331-332: one policy's own "
                             "work moved by up to 0.05 between passes)")
    parser.add_argument("--rotate", type=int, default=0,
                        help="with --interleave: start the first scenario's policy order this "
                             "many places on (a second pass with --rotate 1 runs each scenario "
                             "in the other order)")
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    parser.add_argument("--quick", action="store_true",
                        help="a shorter run: every scenario for 4 s, each workload measured "
                             "alone for 2 s")
    parser.add_argument("--lead", type=float, default=3.0,
                        help="seconds for a scenario's clients to start and warm up")
    parser.add_argument("--big", type=int, default=BIG[0], help="big GEMM size (float16)")
    parser.add_argument("--small", type=int, default=SMALL[0], help="small GEMM size (float32)")
    parser.add_argument("--long", type=int, default=LONG[0], help="long GEMM size (float32)")
    parser.add_argument("--train", type=int, default=TRAIN[0],
                        help="the training step's batch rows (float32; layers a quarter as wide)")
    parser.add_argument("--mid", type=int, default=MID[0],
                        help="the GEMM size (float32) saturating beside interactive+2048")
    parser.add_argument("--sync", type=int, default=SYNC[0],
                        help="the syncing users' GEMM size (float32; four GEMMs a read)")
    parser.add_argument("--sync-long", type=int, default=SYNC_LONG[0],
                        help="sync-long-vs-small's long GEMM size (float32; one GEMM a read)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.calibrate_seconds = 4.0, 2.0
    args.names = [n for n in args.scenarios.split(",") if n]
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)} (there are {', '.join(SCENARIOS)})")
    for policy in args.policies.split(","):
        try:
            policy_variant(policy)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def main(argv=None) -> int:
    global BIG, SMALL, LONG, TRAIN, MID, SYNC, SYNC_LONG
    args = parse_args(argv)
    BIG, SMALL, LONG = (args.big, BIG[1]), (args.small, SMALL[1]), (args.long, LONG[1])
    TRAIN, MID = (args.train, TRAIN[1]), (args.mid, MID[1])
    SYNC, SYNC_LONG = (args.sync, SYNC[1]), (args.sync_long, SYNC_LONG[1])
    if args.client:
        client_main(json.loads(args.client))
        return 0
    names = args.names
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
               "seconds": args.seconds, "scenarios": names, "big": BIG, "small": SMALL,
               "exclusive": {}, "policies": {}}
    try:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(0)
        results["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    except Exception:  # no GPU here: the NumPy device runs it (slowly, for a smoke test)
        results["gpu"] = None
    # the GEMM workloads the scenarios run (measured alone to normalise their rates)
    gemm_kinds = sorted({k for n in names for _u, k, _w in SCENARIOS[n] if k not in NOT_WORK})
    policies = args.policies.split(",")
    # the GPU's clock beside the rates: a power-limited GPU's clock moves with the mix
    # (nvidia-smi stops with the run, also one cut short)
    with tempfile.TemporaryDirectory(prefix="gpuwb-fair-") as tmp, \
            (ClockSampler() if results["gpu"] else contextlib.nullcontext()) as clocks, \
            contextlib.ExitStack() as pools:
        workdir = Path(tmp)

        def opened(policy: str, stack: contextlib.ExitStack):
            """The policy's pool (None for plain CuPy), measured alone first where asked;
            stopped as *stack* closes, also on a run cut short."""
            local = policy == "local"
            pool = None if local else Pool(policy, args.devices, workdir, {})
            if pool is not None:
                stack.callback(pool.stop)
            if policy in args.calibrate.split(",") or not results["exclusive"]:
                results["exclusive"][policy] = calibrate(pool, args.calibrate_seconds, workdir,
                                                         local, sorted({*gemm_kinds, "big", "small"}),
                                                         clocks)
            results["policies"][policy] = {}
            return pool

        def run_one(policy: str, pool, name: str) -> None:
            exclusive = normalising_rates(results["exclusive"], policy)
            by = results["policies"][policy]
            by[name] = scenario(name, pool, exclusive, args.seconds, workdir, pool is None,
                                lead=args.lead, clocks=clocks)
            print(f"{policy:6} {name:14} done", file=sys.stderr, flush=True)
            if by[name].get("void"):
                print(f"{policy:6} {name:14} VOID: {by[name]['void']}", file=sys.stderr,
                      flush=True)
            if args.json:   # what is done so far survives a run cut short
                Path(args.json).write_text(json.dumps(results, indent=1))

        def recalibrated(policy: str, pool) -> None:
            exclusive = normalising_rates(results["exclusive"], policy)
            by = results["policies"][policy]
            after = results.setdefault("exclusive_after", {})[policy] = calibrate(
                pool, args.calibrate_seconds, workdir, pool is None, gemm_kinds)
            for name in names:
                by[name]["work_conservation_drift"] = drift_corrected(
                    by[name], SCENARIOS[name], exclusive, after)

        if args.interleave:
            opened_pools = {policy: opened(policy, pools) for policy in policies}
            results["order"] = []
            for i, name in enumerate(names):
                shift = (i + args.rotate) % len(policies)
                order = policies[shift:] + policies[:shift]
                results["order"].append([name, order])
                for policy in order:
                    run_one(policy, opened_pools[policy], name)
            if args.recalibrate:
                for policy in policies:
                    recalibrated(policy, opened_pools[policy])
        else:
            for policy in policies:
                with contextlib.ExitStack() as one:   # (each pool stopped before the next opens)
                    pool = opened(policy, one)
                    for name in names:
                        run_one(policy, pool, name)
                    if args.recalibrate:
                        recalibrated(policy, pool)
    results["targets"] = verdicts(results, SCENARIOS)
    print(table(results))
    print(targets_table(results["targets"]))
    if args.plot:
        plot(results, args.plot)
    text = json.dumps(results, indent=1)
    if args.json:
        Path(args.json).write_text(text)
    print(text if not args.json else f"JSON in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
