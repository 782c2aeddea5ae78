"""Whole programs, proxy vs local wall time, side by side in one run on one machine.

    python benchmarks/programs.py [--devices auto] [--json out.json] [--quick]

A user feels whole programs, not microbenchmarks. Each program here is the
kind of code people run in a notebook: host data uploaded, small and large
ops, fancy indexing, and a sync inside the loop (a convergence check, a
residual, a loss printed every step):

* ``black_scholes``: 4 M options priced from host arrays, results downloaded
* ``kmeans``: 200 k x 16 points, k = 8, a centre shift checked every iteration
* ``conjugate_gradient``: dense SPD n = 2048, the residual checked every iteration
* ``mlp_training``: a two-layer MLP trained by hand-written backprop on
  minibatches picked by fancy indexing, its loss printed (read) every step
* ``stencil``, ``random_walk``, ``hot_sync``: loops of the kinds issue 37 names (a 512 x 512
  heat-equation step, random draws on 1 M elements, ``float((x + c).sum())``), a scalar
  read every step

``--transports ipc,ipc-nographs`` puts stretch replay on and off side by side
(docs/stretch-replay.md); each proxy side also says whether its results are bitwise equal
to local CuPy's.

Each program runs on local CuPy and through the proxy (one session per
transport, ``ipc://`` and ``tcp://``, on one pool) in alternating rounds; the
median wall time per side is reported with the ratio to local (target: 1.10x
or less). Every proxy result is checked against the local one. With no GPU
the local side is NumPy and the pool runs on the NumPy device.
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
from served_pool import open_pool, sessions_by_transport, use_side  # noqa: E402

TARGET = 1.10


# ------------------------------------------------------------------ programs
# Each takes (xp, size) and returns a small host result to compare across sides.

def black_scholes(xp, n):
    rng = np.random.default_rng(1)
    spot = rng.uniform(5, 30, n).astype(np.float32)
    strike = rng.uniform(1, 100, n).astype(np.float32)
    years = rng.uniform(0.25, 10, n).astype(np.float32)
    s, k, t = xp.asarray(spot), xp.asarray(strike), xp.asarray(years)
    rate, vol = 0.02, 0.30
    sqrt_t = xp.sqrt(t)
    d1 = (xp.log(s / k) + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t)
    d2 = d1 - vol * sqrt_t

    def cnd(d):
        return 0.5 * (1 + _erf(xp, d / math.sqrt(2)))

    discount = xp.exp(-rate * t)
    call = s * cnd(d1) - k * discount * cnd(d2)
    put = k * discount * cnd(-d2) - s * cnd(-d1)
    call_host, put_host = _get(call), _get(put)
    return np.array([call_host.sum(dtype=np.float64), put_host.sum(dtype=np.float64),
                     call_host[12345 % n], put_host[54321 % n]])


def _erf(xp, x):
    """erf by Abramowitz-Stegun 7.1.26 (plain ufuncs: the same code on NumPy and CuPy)."""
    sign = xp.sign(x)
    a = xp.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1 - poly * xp.exp(-a * a))


def kmeans(xp, n, k=8, dims=16, iterations=30):
    rng = np.random.default_rng(2)
    centres_true = rng.normal(0, 5, (k, dims))
    points = (centres_true[rng.integers(0, k, n)] + rng.normal(0, 1, (n, dims))).astype(np.float32)
    x = xp.asarray(points)
    centres = x[xp.asarray(rng.choice(n, k, replace=False))]          # fancy indexing
    labels = None
    for _ in range(iterations):
        distances = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        labels = distances.argmin(axis=1)
        onehot = (labels[:, None] == xp.arange(k)[None, :]).astype(xp.float32)
        counts = onehot.sum(axis=0)
        new = (onehot.T @ x) / xp.maximum(counts, 1)[:, None]
        shift = float(xp.abs(new - centres).max())                     # a sync each iteration
        centres = new
        if shift < 1e-4:
            break
    inertia = float(((x - centres[labels]) ** 2).sum())                # fancy indexing again
    return np.array([inertia, float(np.sort(_get(centres).sum(axis=1))[0])])


def conjugate_gradient(xp, n, tol=1e-6, max_iterations=300):
    rng = np.random.default_rng(3)
    m = rng.normal(0, 1, (n, n)).astype(np.float32) / np.sqrt(n)
    a_host = (m @ m.T + 2 * np.eye(n, dtype=np.float32)).astype(np.float32)
    b_host = rng.normal(0, 1, n).astype(np.float32)
    a, b = xp.asarray(a_host), xp.asarray(b_host)
    x = xp.zeros(n, dtype=xp.float32)
    r = b - a @ x
    p = r.copy()
    rs = float(r @ r)
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        ap = a @ p
        alpha = rs / float(p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = float(r @ r)                                          # the residual check
        if math.sqrt(rs_new) < tol * math.sqrt(float(b_host @ b_host)):
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return np.array([float(xp.linalg.norm(a @ x - b)), float(iterations)])


def mlp_training(xp, n, steps=200, batch=256, hidden=256, features=64, classes=10, quiet=True):
    rng = np.random.default_rng(4)
    data = rng.normal(0, 1, (n, features)).astype(np.float32)
    truth = rng.normal(0, 1, (features, classes)).astype(np.float32)
    labels_host = (data @ truth).argmax(axis=1)
    x_all, y_all = xp.asarray(data), xp.asarray(labels_host)
    w1 = xp.asarray((rng.normal(0, 1, (features, hidden)) / np.sqrt(features)).astype(np.float32))
    w2 = xp.asarray((rng.normal(0, 1, (hidden, classes)) / np.sqrt(hidden)).astype(np.float32))
    lr = 0.1
    losses = []
    for step in range(steps):
        idx = xp.asarray(rng.integers(0, n, batch))                    # a small upload per step
        xb, yb = x_all[idx], y_all[idx]                                 # fancy indexing
        h = xp.maximum(xb @ w1, 0)
        logits = h @ w2
        logits = logits - logits.max(axis=1, keepdims=True)
        p = xp.exp(logits)
        p = p / p.sum(axis=1, keepdims=True)
        rows = xp.arange(batch)
        loss = float(-xp.log(p[rows, yb] + 1e-9).mean())               # read every step
        losses.append(loss)
        if not quiet:
            print(f"step {step} loss {loss:.4f}")
        grad = p.copy()
        grad[rows, yb] -= 1
        grad /= batch
        gw2 = h.T @ grad
        gh = (grad @ w2.T) * (h > 0)
        gw1 = xb.T @ gh
        w1 -= lr * gw1
        w2 -= lr * gw2
    return np.array([losses[0], losses[-1], float(_get(w2).sum())])


def stencil(xp, n, steps=200):
    """A 5-point heat-equation step on an n x n grid of slices and elementwise ops, its
    largest change read every step (the kind of loop issue 37 measured at 2.3x)."""
    rng = np.random.default_rng(5)
    u = xp.asarray(rng.random((n, n), dtype=np.float32))
    change = 0.0
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += 0.2 * lap
        change = float(xp.abs(lap).max())                              # read every step
    return np.array([change, float(u.sum())])


def random_walk(xp, n, steps=200):
    """Random draws in a loop on n-element arrays, one scalar read per step."""
    xp.random.seed(6)
    x = xp.zeros(n, dtype=xp.float32)
    mean = 0.0
    for step in range(steps):
        x += (xp.random.rand(n).astype(xp.float32) - 0.5) * (0.1 + 1e-4 * step)
        mean = float(x.mean())                                          # read every step
    return np.array([mean, float(xp.abs(x).max())])


def hot_sync(xp, n, steps=2000):
    """The hot sync, ``float((x + c).sum())``, in a loop whose scalar changes."""
    x = xp.arange(n, dtype=xp.float32)
    total = 0.0
    for step in range(steps):
        total += float((x + step * 0.5).sum())
    return np.array([total])


def _get(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


PROGRAMS = {
    # name: (function, full size, quick size, relative tolerance of the check)
    "black_scholes": (black_scholes, 4_000_000, 200_000, 1e-4),
    "kmeans": (kmeans, 200_000, 20_000, 1e-3),
    "conjugate_gradient": (conjugate_gradient, 2048, 256, 1e-2),
    "mlp_training": (mlp_training, 50_000, 5_000, 1e-3),
    "stencil": (stencil, 512, 64, 1e-5),
    # (the device's generator: NumPy's draws differ, so checked only against local CuPy)
    "random_walk": (random_walk, 1_000_000, 10_000, None),
    "hot_sync": (hot_sync, 1000, 1000, 1e-6),
}


# ------------------------------------------------------------------ driver

def local_module():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy, "cupy"
    except Exception:  # no CuPy or no GPU here: NumPy is the local baseline
        return np, "numpy"


def finish(xp, session):
    """Wait for all launched work (a program's end, as a notebook cell's end would)."""
    if session is not None:
        session.sync(device=True)
    elif xp is not np:
        xp.cuda.get_current_stream().synchronize()


def measure(sides, names, quick, rounds):
    """Each program on every side in alternating rounds (A B C C B A ...); the median."""
    times = {name: {side: [] for side, _x, _s in sides} for name in names}
    worker = {name: {side: [] for side, _x, s in sides if s is not None} for name in names}
    results = {name: {} for name in names}
    for name in names:
        fn, full, small, _tol = PROGRAMS[name]
        size = small if quick else full
        for side, xp, session in sides:                 # warm-up: kernels compiled, pools grown
            results[name][side] = fn(_xp(side, xp, session), size)
            finish(xp, session)
        for r in range(rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))
            for side, xp, session in order:
                module = _xp(side, xp, session)
                busy = session.worker_seconds if session is not None else 0.0
                t0 = time.perf_counter()
                results[name][side] = fn(module, size)
                finish(xp, session)
                times[name][side].append(time.perf_counter() - t0)
                if session is not None:   # the worker's own time in it (the replies' t)
                    worker[name][side].append(session.worker_seconds - busy)
    return times, worker, results


def _xp(side, xp, session):
    # the proxy module works on the *active* session: make this side's session active
    use_side(side, session)
    return module_for(session) if session is not None else xp


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--transports", default="ipc,tcp")
    parser.add_argument("--policy", default="fair")
    parser.add_argument("--served", action="store_true",
                        help="the pool in a process of its own (gpuwb-backend serve)")
    args = parser.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)}")

    local, local_kind = local_module()
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
               "python": sys.version.split()[0], "local_kind": local_kind, "quick": args.quick,
               "policy": args.policy, "served": args.served, "rounds": args.rounds}
    if local_kind == "cupy":
        props = local.cuda.runtime.getDeviceProperties(0)
        results["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        results["cupy"] = local.__version__
    with open_pool(args.policy, args.devices, args.served) as pool, \
            sessions_by_transport(pool, args.transports) as sessions:
        results["pool_device"] = next(iter(sessions.values())).device
        sides = [("local", local, None)] + [(f"proxy_{t}", None, s) for t, s in sessions.items()]
        times, worker, outputs = measure(sides, names, args.quick, args.rounds)
        # each session's stretch replay, as its worker counts it (docs/stretch-replay.md)
        results["stretches"] = {t: s.memory_info().get("stretches") for t, s in sessions.items()}

    rows, failures = {}, []
    for name in names:
        tol = PROGRAMS[name][3]
        # (draws of the device's generator: compared only with local CuPy's, exactly)
        checked = tol is not None or local_kind == "cupy"
        row = {side: {"median_s": statistics.median(ts), "each_s": ts} for side, ts in times[name].items()}
        for side in row:
            if side == "local":
                continue
            row[side]["vs_local"] = row[side]["median_s"] / row["local"]["median_s"]
            row[side]["worker_median_s"] = statistics.median(worker[name][side])
            same = (np.allclose(outputs[name][side], outputs[name]["local"], rtol=tol or 0, atol=tol or 0)
                    if checked else True)
            row[side]["same_result"] = bool(same)
            # bitwise: local CuPy and the pool run the same kernels (graphs on or off)
            row[side]["bitwise_local"] = bool(np.array_equal(outputs[name][side], outputs[name]["local"]))
            if not same:
                failures.append(f"{name} via {side}: {outputs[name][side]} != local {outputs[name]['local']}")
        rows[name] = row
    results["programs"] = rows
    results["failures"] = failures

    sides = [s for s in next(iter(rows.values())) if s != "local"] if rows else []
    head = f"{'program':20} {'local s':>9}" + "".join(f" {s.replace('proxy_', 'proxy ') + ' s':>12} {'ratio':>6}"
                                                     for s in sides)
    print(head + f"  target <= {TARGET:.2f}x local ({local_kind})")
    print("-" * (len(head) + 30))
    for name, row in rows.items():
        line = f"{name:20} {row['local']['median_s']:9.4f}"
        for s in sides:
            line += f" {row[s]['median_s']:12.4f} {row[s]['vs_local']:6.2f}"
        print(line)
    for failure in failures:
        print("RESULT DIFFERS:", failure)
    emit(results, args.json)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
