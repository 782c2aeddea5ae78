"""Stretch replay on and off, per iteration, side by side with local CuPy in one run.

    python benchmarks/replay_sync.py [--devices auto] [--reps 2000] [--json out.json] [--policy fair]
        [--transports ipc,ipc-noearly,ipc-nofast,ipc-nographs] [--loops hot_sync,stencil] [--quick]

For its loops — the hot sync ``float((x + 1).sum())`` on 1 000 float32, a 512 x 512
stencil step with its largest change read, and ``sync_4ops`` (``y = x * w + 0.25``, then
``float((y * y).sum())``: long enough to go early), and two with matrix products that run
eagerly between a replay's graphs (``product_sync``, ``float((a @ v + 1).sum())``, and
``regression_step``, a logistic regression's step that writes its weights in place;
``power_iteration``, whose product is a result the user holds) and ``walk_step`` (a random
walk: a ``RandomState``'s draws each step), ``pi_step`` (Monte Carlo π, the module's
draws) and ``boot_step`` (a bootstrap's step: a ``Generator``'s draws, made inside the
graphs), ``time_step`` (``t = i * dt``), ``decay_step`` (a threshold that decays, ISTA's:
``lam *= 0.999`` and ``clip(v, -0.3 * lam, 0.3 * lam)``), ``anneal_step`` (Langevin's step,
its noise drawn once: ``eta = 0.05 / (1.0 + 0.02 * i)`` and ``sqrt(2.0 * eta)``) and
``heat_step`` (a 2 048²
stencil written in place: long device time, its input written), ``two_reads`` (a training step
that reads its loss and its accuracy: two stretches taking turns), ``logged_step`` (the same
step reading its loss, then downloading its weights and reading its accuracy: trailing
downloads), ``masked_step`` (a leaky-ReLU layer's step by ``where(c, x, y)`` and
``split``: calls whose structure the client tells), ``three_reads`` (three
reads a step, one stretch writing its input), ``minibatch_step`` (minibatch SGD: its indices
uploaded each step), ``feed_step`` (a host reading of eight values uploaded each step, the
stretch's first op) and ``norm_fed_step`` (power iteration as a user tracking convergence
writes it: the norm read each step, the vector divided by that Python float, the read fed
back as the next step's parameter) — it reports the median wall time per
iteration locally and through the pool over the same-host link with stretch replay on
(``ipc``, the default), with the client's fast path for held stretches off (``ipc-noearly`` (replays sent at the sync point, never early:
``GPUWB_EARLY_REPLAY=0``), ``ipc-nofast``,
``GPUWB_FAST_PATH=0``, issue 50) and with replay off (``ipc-nographs``, ``GPUWB_GRAPHS=0``),
and the worker's own time per iteration (the replies' ``t``): issue 37's "worker's cost for
a 3-op sync batch within local CuPy's time + 20 µs". Each side's results must be bitwise
equal to local CuPy's (a loop that draws, where the local side is NumPy: not compared, "-").
The raw round trip of a Unix socket, measured in the same run,
gives the hot sync's target (raw + local + 20 µs); the stencil's is issue 50's for loops
(<= 0.5x local). The table says each target and, side by side, whether it is met, and how
many of the measured iterations were replays of a held stretch (the client's count).
Prints a table, then one JSON object (also written to --json).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelproxy.modules import module_for  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from programs import local_module  # noqa: E402
from raw_transport import bench_raw  # noqa: E402
from served_pool import OWN_POOLS_HELP, sessions_for, use_side  # noqa: E402


def hot_sync(xp):
    x = xp.arange(1000, dtype=xp.float32)

    def step(i):
        return float((x + 1).sum())
    return step


def stencil(xp):
    state = {"u": xp.asarray(np.random.default_rng(5).random((512, 512), dtype=np.float32))}

    def step(i):
        u = state["u"]
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += 0.2 * lap
        state["u"] = u
        return float(xp.abs(lap).max())
    return step


def sync_4ops(xp):
    """A loop a little longer than the hot sync, long enough for its replay to go early
    (kernelproxy/early_replay.py: three ops and a sum before its read), whose replies the
    steady lane pushes once its runs go whole (``EarlyPlan.lane``)."""
    x = xp.arange(1000, dtype=xp.float32) / 7
    w = xp.full(1000, 0.5, dtype=xp.float32)

    def step(i):
        y = x * w + 0.25
        return float((y * y).sum())
    return step


def product_sync(xp):
    """A matrix-vector product before the read, ``float((a @ v + 1).sum())`` on 256²
    float32: the product is cuBLAS's, which CuPy refuses to capture, so it runs eagerly
    between the replay's graphs (worker/eager_ops.py), in the steady lane's run ahead too."""
    rng = np.random.default_rng(6)
    a = xp.asarray(rng.random((256, 256), dtype=np.float32))
    v = xp.asarray(rng.random(256, dtype=np.float32))

    def step(i):
        return float((a @ v + 1).sum())
    return step


def regression_step(xp):
    """A small logistic regression's step as a user writes it: two products (eager), the
    sigmoid, its weights written in place, its loss read (4 096 x 16 float32)."""
    rng = np.random.default_rng(7)
    x = xp.asarray(rng.random((4096, 16), dtype=np.float32))
    y = xp.asarray((rng.random(4096) > 0.5).astype(np.float32))
    w = xp.zeros(16, dtype=xp.float32)

    def step(i):
        nonlocal w
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y) / 4096)
        return float(((p - y) ** 2).mean())
    return step


def power_iteration(xp):
    """Power iteration on a 256² float32 matrix, its first component read each step: the
    product ``w = a @ v`` (eager) is a result the user holds until the next step."""
    a = xp.asarray(np.random.default_rng(8).random((256, 256), dtype=np.float32))
    v = xp.ones(256, dtype=xp.float32)

    def step(i):
        nonlocal v
        w = a @ v
        v = w / xp.sqrt((w * w).sum())
        return float(v[0])
    return step


def norm_fed_step(xp):
    """Power iteration on a 256² float32 matrix as a user tracking convergence writes it:
    the norm read each step and the vector divided by that Python float, so that each
    step's parameter is the value the step before read (worker/fed_params.py)."""
    a = xp.asarray(np.random.default_rng(8).random((256, 256), dtype=np.float32))
    v = xp.ones(256, dtype=xp.float32)

    def step(i):
        nonlocal v
        w = a @ v
        norm = float(xp.sqrt((w * w).sum()))
        v = w / norm
        return norm
    return step


def walk_step(xp):
    """A random walk of 1 000 walkers, a ``RandomState``'s normal draws each step (eager:
    cuRAND, drawn ahead and undone from the generator's journal where a run ahead is
    dropped), their spread read."""
    rs = xp.random.RandomState(9)
    x = xp.zeros(1000, dtype=xp.float64)

    def step(i):
        nonlocal x
        x = x + rs.standard_normal(1000)
        return float(x.std())
    return step


def pi_step(xp):
    """Monte Carlo π with the module's functions (the global RandomState's draws), 2 x 2 000
    points a step, the estimate read: the draw is a result the user holds until the next
    step."""
    xp.random.seed(10)

    def step(i):
        p = xp.random.uniform(size=(2, 2000))
        return float(((p * p).sum(axis=0) < 1).mean() * 4)
    return step


def boot_step(xp):
    """A bootstrap's step with ``default_rng``'s Generator: resample weights (``random``) and
    normal noise (``standard_normal``) on 1 000 points, the weighted mean read; the draws
    are made inside the replay's graphs (worker/eager_ops.py's ``captured_draw``)."""
    rng = xp.random.default_rng(11)
    sample = xp.linspace(-1.0, 1.0, 1000)

    def step(i):
        w = rng.random(1000)
        noisy = sample + 0.01 * rng.standard_normal(1000)
        return float((w * noisy).sum() / w.sum())
    return step


def time_step(xp):
    """A field at time ``t = i * dt`` (``dt = 0.01``, the loop's counter times a float that
    is not exact in binary), its energy read: a float parameter whose next value the worker
    must guess bit for bit (worker/float_steps.py)."""
    x = xp.linspace(0.0, 1.0, 4096)

    def step(i):
        t = i * 0.01
        return float((xp.sin(x * t) ** 2).sum())
    return step


def decay_step(xp):
    """ISTA's soft threshold at a level that decays, as a notebook writes it (4 096 float32,
    carried): ``clip(v, -0.3 * lam, 0.3 * lam)``, then ``lam = lam * 0.999``, the level read
    with the step's ``lam``: three floats that change every step, two of them the last
    ``lam`` times a factor (worker/float_steps.py's decay and ``next_floats``)."""
    rng = np.random.default_rng(12)
    y = xp.asarray((rng.standard_normal(4096) * 0.05).astype(np.float32))
    state = {"x": xp.asarray(rng.standard_normal(4096).astype(np.float32)), "lam": 0.5}

    def step(i):
        v = state["x"] * 0.99 + y
        lam = state["lam"]
        state["x"] = x = v - xp.clip(v, -0.3 * lam, 0.3 * lam)
        state["lam"] = lam = lam * 0.999
        return float(lam * xp.abs(x).sum())
    return step


def anneal_step(xp):
    """Langevin's step on 4 096 float64 with its noise drawn once: a step size annealed as
    ``0.05 / (1.0 + 0.02 * i)`` (worker/float_steps.py's harmonic model) and the noise's scale
    ``sqrt(2.0 * eta)`` (the root of its double: worker/float_relations.py), the mean energy
    read."""
    rng = np.random.default_rng(13)
    noise = xp.asarray(rng.standard_normal(4096) * 0.01)
    state = {"x": xp.asarray(rng.uniform(-1.1, 1.1, 4096))}

    def step(i):
        eta = 0.05 / (1.0 + 0.02 * i)
        x = state["x"]
        state["x"] = x = x - eta * (4.0 * x * (x * x - 1.0)) + math.sqrt(2.0 * eta) * noise
        return float(((x * x - 1.0) ** 2).mean())
    return step


#: heat_step's plate: 2 048 x 2 048 (``--quick``: 256 x 256, a smoke run's)
HEAT_SIZE = 2048


def heat_step(xp):
    """heat2d's step written in place on a ``HEAT_SIZE``² float32 plate (a slice assignment),
    the Laplacian's largest magnitude read: a step that writes its input whose device time
    is long (committed ahead, its input's values kept aside for a roll-back:
    worker/pushed_replies.py)."""
    u0 = np.zeros((HEAT_SIZE, HEAT_SIZE), dtype=np.float32)
    u0[0, :] = 1.0
    u = xp.asarray(u0)

    def step(i):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * lap
        return float(xp.abs(lap).max())
    return step


def two_reads(xp):
    """A training step that reads its loss *and* its accuracy, as a notebook prints both
    (logistic regression on 4 096 x 16 float32, its weights written in place): two reads a
    step, so two held stretches taking turns (the steady lane's turns: worker/steady_lane.py
    ``_arm_turns``); the step's value is the accuracy, read after the loss."""
    rng = np.random.default_rng(14)
    x = xp.asarray(rng.standard_normal((4096, 16)).astype(np.float32))
    y = xp.asarray((rng.random(4096) > 0.5).astype(np.float32))
    state = {"w": xp.zeros(16, dtype=xp.float32)}

    def step(i):
        w = state["w"]
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y)) / 4096
        loss = float(((p - y) ** 2).mean())
        return loss + float(((p > 0.5) == (y > 0.5)).mean())
    return step


def logged_step(xp):
    """A training step that reads its loss, then keeps its weights and its accuracy on the
    host each step, as a notebook logs them (logistic regression on 4 096 x 16 float32, its
    weights written in place): the weights' download and the accuracy's read come right
    after the loss's read, each a round trip of its own until the loss's replay brought
    them with its reply (kernelproxy/trailing_downloads.py, the forty-sixth session)."""
    rng = np.random.default_rng(15)
    x = xp.asarray(rng.standard_normal((4096, 16)).astype(np.float32))
    y = xp.asarray((rng.random(4096) > 0.5).astype(np.float32))
    state = {"w": xp.zeros(16, dtype=xp.float32), "log": []}

    def step(i):
        w = state["w"]
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y)) / 4096
        accuracy = ((p > 0.5) == (y > 0.5)).mean()
        loss = float(((p - y) ** 2).mean())
        weights = xp.asnumpy(w) if hasattr(xp, "asnumpy") else w.copy()   # (NumPy: a copy)
        state["log"].append(weights)
        return loss + float(accuracy) + float(weights[0])
    return step


def masked_step(xp):
    """A leaky-ReLU layer's step on 4 096 float32 values written as newcomers write it: the
    activation by ``where(c, x, y)``, its gradient's mask likewise, the batch cut in two by
    ``split``, each half scaled, the loss read. Before the forty-seventh session each
    ``where`` and ``split`` waited for its result's structure, a round trip each
    (kernelproxy/result_structures.py)."""
    rng = np.random.default_rng(16)
    x = xp.asarray(rng.standard_normal(4096).astype(np.float32))
    target = xp.asarray(rng.standard_normal(4096).astype(np.float32))
    state = {"w": xp.ones(4096, dtype=xp.float32)}

    def step(i):
        w = state["w"]
        z = x * w
        a = xp.where(z > 0, z, 0.01 * z)
        err = a - target
        grad = err * xp.where(z > 0, 1.0, 0.01) * x
        first, second = xp.split(grad, 2)
        state["w"] = w - 0.01 * xp.concatenate([first * 0.9, second * 1.1])
        return float((err * err).mean())
    return step


def three_reads(xp):
    """A carried field's step with three reads a step (its sum, a running mean's largest
    value, their smallest difference): three stretches taking turns, the second writing its
    own input (the running mean) in place."""
    state = {"u": xp.linspace(0, 1, 4096, dtype=xp.float32),
             "mean": xp.zeros(4096, dtype=xp.float32)}

    def step(i):
        state["u"] = v = state["u"] * 0.999 + 0.0005
        total = float(v.sum())
        mean = state["mean"]
        mean *= 0.9
        mean += 0.1 * v
        return total + float(mean.max()) + float((v - mean).min())
    return step


def minibatch_step(xp):
    """Minibatch SGD's step as ``programs.py``'s ``sgd_minibatch`` writes it, on 16 384 x 16
    float32: 256 indices drawn on the host and uploaded (a small upload inside the held
    stretch, its data a frame of the replay's message), the rows gathered by them, the loss
    read, the weights written in place."""
    rng = np.random.default_rng(21)
    x = xp.asarray(rng.normal(0, 1, (16384, 16)).astype(np.float32))
    y = xp.asarray(rng.normal(0, 1, 16384).astype(np.float32))
    w = xp.zeros(16, dtype=xp.float32)
    picks = np.random.default_rng(22)

    def step(i):
        idx = xp.asarray(picks.integers(0, 16384, 256))
        xb, yb = x[idx], y[idx]
        err = xb @ w - yb
        loss = float((err * err).mean())
        w[...] -= 0.05 * (xb.T @ err) / 256
        return loss
    return step


def feed_step(xp):
    """An online filter fed a host reading each step: eight float32 values uploaded, blended
    into its state of 4 096, its norm read (a small upload as the stretch's first op)."""
    readings = np.random.default_rng(23)
    state = xp.zeros(4096, dtype=xp.float32)

    def step(i):
        nonlocal state
        obs = xp.asarray(readings.random(8, dtype=np.float32))
        state = 0.9 * state + 0.1 * xp.tile(obs, 512)
        return float(xp.sqrt((state * state).sum()))
    return step


#: loops that draw from the device's generator: on the NumPy device its numbers are not
#: NumPy's own, so they are compared with local CuPy's only (None: not compared)
DRAWING = frozenset({"walk_step", "pi_step", "boot_step"})

LOOPS = {"hot_sync": hot_sync, "stencil": stencil, "sync_4ops": sync_4ops,
         "product_sync": product_sync, "regression_step": regression_step,
         "power_iteration": power_iteration, "walk_step": walk_step, "pi_step": pi_step,
         "boot_step": boot_step, "time_step": time_step, "decay_step": decay_step,
         "anneal_step": anneal_step, "heat_step": heat_step, "two_reads": two_reads,
         "logged_step": logged_step, "masked_step": masked_step, "three_reads": three_reads,
         "minibatch_step": minibatch_step, "feed_step": feed_step, "norm_fed_step": norm_fed_step}


def per_iteration(step, reps, session):
    values = [step(i) for i in range(20)]   # warm-up: kernels built, stretches held
    worker0 = session.worker_seconds if session is not None else 0.0
    rounds = []
    per = max(1, reps // 5)
    for _ in range(5):
        t0 = time.perf_counter()
        for i in range(per):
            values.append(step(i))
        rounds.append((time.perf_counter() - t0) / per * 1e6)
    worker = ((session.worker_seconds - worker0) / (5 * per) * 1e6) if session is not None else None
    return statistics.median(rounds), worker, values


#: issue 50's target for a loop of >= 20 iterations, against local CuPy
LOOP_TARGET = 0.5
#: the hot sync's target above the raw round trip and local CuPy's own time (µs)
HOT_SYNC_MARGIN_US = 20.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--transports", default="ipc,ipc-noearly,ipc-nofast,ipc-nographs",
                        help="proxy sides (benchmarks/served_pool.py)")
    parser.add_argument("--loops", default=",".join(LOOPS), help="of " + ",".join(LOOPS))
    parser.add_argument("--quick", action="store_true", help="200 reps, for a smoke run")
    parser.add_argument("--own-pools", action="store_true", help=OWN_POOLS_HELP)
    parser.add_argument("--policy", default="fair",
                        help="the pool's policy (share is the pool's default; fair as in earlier runs)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps = min(args.reps, 200)
        global HEAT_SIZE
        HEAT_SIZE = 256
    loops = [name for name in args.loops.split(",") if name]
    unknown = sorted(set(loops) - set(LOOPS))
    if unknown:
        parser.error(f"unknown loops: {', '.join(unknown)}")
    local, kind = local_module()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "local_kind": kind,
           "reps": args.reps}
    if kind == "cupy":
        name = local.cuda.runtime.getDeviceProperties(0)["name"]
        out["gpu"] = name.decode() if isinstance(name, bytes) else name
        out["cupy"] = local.__version__
    rows = {}
    with sessions_for(args.policy, args.devices, args.transports, own_pools=args.own_pools) as sessions:
        out["pool_device"] = next(iter(sessions.values())).device
        for loop in loops:
            make = LOOPS[loop]
            compared = kind == "cupy" or loop not in DRAWING
            row = {}
            wall, _, reference = per_iteration(make(local), args.reps, None)
            row["local"] = {"us": wall}
            for side, session in sessions.items():
                use_side(side, session)
                replayed = _replays(session)
                wall, worker, values = per_iteration(make(module_for(session)), args.reps, session)
                row[side] = {"us": wall, "worker_us": worker, "vs_local": wall / row["local"]["us"],
                             "bitwise_local": values == reference if compared else None,
                             # the iterations (warm-up's 20 included) answered as replays
                             "replayed": (_replays(session) - replayed) / len(values)}
            rows[loop] = row
        out["stretches"] = {t: s.memory_info().get("stretches") for t, s in sessions.items()}
        out["client_stretches"] = {t: s.stretches.figures() if s.stretches is not None else None
                                   for t, s in sessions.items()}
        # what each session's settings say of the client's fast path (None: no such setting yet)
        out["fast_path"] = {t: getattr(s.settings, "fast_path", None) for t, s in sessions.items()}
    out["loops"] = rows
    out["transports"] = list(sessions)
    # the hot sync's target: the raw round trip (a Unix socket, as ipc:// sessions use) +
    # local CuPy's own time + 20 us, from this run
    raw = bench_raw(1 << 20, 1, "unix", idle_reps=10)["rtt_small_us"]
    out["raw_rtt_us"] = raw
    targets = {}
    if "hot_sync" in rows:
        out["hot_sync_target_us"] = raw + rows["hot_sync"]["local"]["us"] + HOT_SYNC_MARGIN_US
        targets["hot_sync"] = {"us": out["hot_sync_target_us"],
                               "says": f"<= raw RTT + local + {HOT_SYNC_MARGIN_US:.0f} us"}
    for loop in rows:
        if loop != "hot_sync":
            targets[loop] = {"us": LOOP_TARGET * rows[loop]["local"]["us"],
                             "says": f"<= {LOOP_TARGET:.2f}x local (issue 50, a loop)"}
    for loop, target in targets.items():
        for side in sessions:
            rows[loop][side]["target_us"] = target["us"]
            rows[loop][side]["met"] = rows[loop][side]["us"] <= target["us"]
    out["targets"] = targets
    print(table(rows, list(sessions), targets, raw, kind))
    emit(out, args.json)
    return 0 if all(rows[loop][side]["bitwise_local"] is not False for loop in rows
                    for side in sessions) else 1


def _replays(session) -> int:
    stretches = getattr(session, "stretches", None)
    return stretches.replays if stretches is not None else 0


def table(rows: dict, sides: list[str], targets: dict, raw: float, kind: str) -> str:
    """A loop a line: local's µs an iteration, each side's, its ratio, the worker's µs, the
    share of iterations replayed, whether it met the loop's target; then the targets."""
    head = f"{'loop':10} {'local us':>9}" + "".join(
        f" {side + ' us':>17} {'ratio':>6} {'worker':>7} {'replay':>6} {'met':>3}" for side in sides)
    lines = [head + f"  bitwise   (local: {kind})", "-" * (len(head) + 30)]
    for loop, row in rows.items():
        line = f"{loop:10} {row['local']['us']:9.1f}"
        for side in sides:
            r = row[side]
            line += (f" {r['us']:17.1f} {r['vs_local']:6.2f} {r['worker_us']:7.1f} {r['replayed']:6.0%}"
                     f" {'yes' if r.get('met') else 'no':>3}")
        lines.append(line + "  " + " ".join({True: "yes", False: "NO", None: "-"}[row[s]["bitwise_local"]]
                                            for s in sides))
    lines.append(f"raw round trip (Unix socket) {raw:.1f} us")
    for loop, target in targets.items():
        verdict = ", ".join(f"{side} {'met' if rows[loop][side]['met'] else 'missed'}" for side in sides)
        lines.append(f"target, {loop}: {target['says']} = {target['us']:.1f} us: {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
