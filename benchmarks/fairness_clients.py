"""The client processes of ``benchmarks/fairness.py``: one per user of a scenario, each
with its own session and token, started as ``fairness.py --client SPEC``.

Kinds: GEMM loops (``big``, ``small``, ``long``) that keep their session backlogged and
fence about every FENCE_SECONDS of their own work, reading the fence before last; the
``interactive`` user, one small sync op every INTERACTIVE_PERIOD; the ``idle`` one, a session
that ran one small op and then sits open, doing nothing; the ``train`` user, a
DL-like training step that reads its loss each step; the syncing loops (``sync``,
``longsync``, ``smallsync``: the spec's ``per_sync`` GEMMs, then a read of one element). Each writes its progress over time
(or its latencies) to the spec's ``out`` file as JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["client_main", "wait_until", "started", "training_step", "FENCE_SECONDS",
           "INTERACTIVE_PERIOD", "GO_WAIT"]

FENCE_SECONDS = 0.01         # each GEMM client fences about every 10 ms of its own work
INTERACTIVE_PERIOD = 0.01
#: how long a client, warmed up, waits for the driver's go (every client of its run warmed)
GO_WAIT = 600.0


def client_main(spec: dict) -> None:
    """One client process: connect as its user, warm up, run its loop between start and stop."""
    import numpy as np

    if spec["local"]:
        import cupy as xp
        session = None
    else:
        import kernelproxy
        from kernelproxy.modules import module_for
        session = kernelproxy.connect(spec["address"], spec["token"])
        xp = module_for(session)
    out: dict = {"user": spec["user"], "kind": spec["kind"]}
    if spec["kind"] == "interactive":
        x = xp.arange(1024, dtype=xp.float32)
        for _ in range(50):
            float((x + 1).sum())
        spec = started(spec)
        issued, latencies = [], []
        t = spec["start"]
        while t < spec["stop"]:
            wait_until(t)
            t0 = time.monotonic()
            float((x + 1).sum())
            t1 = time.monotonic()
            issued.append(t0)
            latencies.append(t1 - t0)
            t += INTERACTIVE_PERIOD
            if t < t1:   # an op longer than the period: skip the missed slots
                t += (t1 - t) // INTERACTIVE_PERIOD * INTERACTIVE_PERIOD + INTERACTIVE_PERIOD
        out.update(issued=issued, latencies=latencies)
    elif spec["kind"] == "idle":   # a notebook that ran a cell and sits there, its session
        # open and its array held: the commonest company a user has (issue 51)
        x = xp.arange(1024, dtype=xp.float32)
        float((x + 1).sum())
        spec = started(spec)
        wait_until(spec["stop"])
    elif spec["kind"] == "train":
        step = training_step(xp, np, spec["n"])
        for _ in range(5):
            step()
        spec = started(spec)
        done, points = 0, [(time.monotonic(), 0)]
        while time.monotonic() < spec["stop"]:
            step()   # (reads its loss: a sync each step, as a training loop that logs it)
            done += 1
            points.append((time.monotonic(), done))
        out.update(points=points)
    elif spec.get("per_sync"):   # a loop of GEMMs and a read of one element (issue 51)
        n, dtype, k = spec["n"], spec["dtype"], spec["per_sync"]
        a = xp.asarray(np.random.default_rng(0).random((n, n)).astype(dtype))
        b = xp.asarray(np.random.default_rng(1).random((n, n)).astype(dtype))
        for _ in range(5):
            for _ in range(k):
                c = a @ b
            float(c[0, 0])
        spec = started(spec)
        done, points = 0, [(time.monotonic(), 0)]
        while time.monotonic() < spec["stop"]:
            for _ in range(k):
                c = a @ b
            float(c[0, 0])   # the sync: nothing queued until the value is back
            done += k
            points.append((time.monotonic(), done))
        out.update(points=points)
    else:
        n, dtype = spec["n"], spec["dtype"]
        a = xp.asarray(np.random.default_rng(0).random((n, n)).astype(dtype))
        b = xp.asarray(np.random.default_rng(1).random((n, n)).astype(dtype))
        c = a @ b
        fences = _fencer(xp, session)
        k = 4
        for _ in range(12):   # warm-up, and a first measure of the GEMM's time: K per fence
            t0 = time.monotonic()
            for _ in range(k):
                c = a @ b
            fences.push(c, 0)
            fences.drain()
            k = max(1, min(4000, int(FENCE_SECONDS / max((time.monotonic() - t0) / k, 1e-7))))
        # in a scenario K comes from the workload's rate alone: measured in a warm-up beside
        # other users' warm-ups, K ranged from 1 to 15 for the same GEMM (H100 runs 17-22),
        # and a user fencing after every GEMM holds the device idle at each fence
        k = spec.get("per_fence") or k
        spec = started(spec)
        done, points = 0, [(time.monotonic(), 0)]
        while time.monotonic() < spec["stop"]:
            for _ in range(k):
                c = a @ b
            done += k
            fences.push(c, done)
            got = fences.pop_old()
            if got is not None:
                points.append(got)
        points.extend(fences.drain())
        out.update(points=points, per_fence=k)
    if session is not None:   # what the worker split (issue 38: long ops in pieces)
        info = session.memory_info()
        out["split"] = info.get("split")
        if spec["kind"] == "interactive":   # how its requests were answered: from a replay run
            # ahead (its read made at once or not), or replayed when asked (issue 51)
            stretches = info.get("stretches")
            if stretches:
                out["stretches"] = {name: stretches.get(name)
                                    for name in ("replays", "ahead", "ahead_read", "ahead_missed")}
            if session.stretches is not None:   # (the client's side: stretches let go by
                # its timing, replays paced or not graphed; run 326's one pass whose
                # interactive user replayed 28 times of ~845 said nothing of why)
                out["client_stretches"] = session.stretches.figures()
        session.close()
    Path(spec["out"]).write_text(json.dumps(out))


def training_step(xp, np, rows: int):
    """A DL-like step (issue 38's mixed traffic): a two-layer MLP's forward and backward
    pass on a batch of *rows* (4096: six float32 GEMMs of about a millisecond on an H100)
    between elementwise ops and reductions, and the loss read back, so the session pauses
    between steps as a training loop that logs its loss does."""
    rng = np.random.default_rng(3)
    width = max(1, rows // 4)
    x = xp.asarray(rng.standard_normal((rows, width), dtype=np.float32))
    y = xp.asarray(rng.standard_normal((rows, width), dtype=np.float32))
    w1 = xp.asarray(rng.standard_normal((width, rows), dtype=np.float32) * 0.01)
    w2 = xp.asarray(rng.standard_normal((rows, width), dtype=np.float32) * 0.01)

    def step() -> float:
        nonlocal w1, w2
        h = x @ w1
        a = xp.maximum(h, 0)
        out = a @ w2
        diff = out - y
        loss = float((diff * diff).mean())
        g_out = diff * (2.0 / diff.size)
        g_w2 = a.T @ g_out
        g_a = g_out @ w2.T
        g_h = g_a * (h > 0)
        g_w1 = x.T @ g_h
        w1 = w1 - 0.01 * g_w1
        w2 = w2 - 0.01 * g_w2
        return loss
    return step


class _fencer:
    """Fences read one behind: the client never leaves its session without work."""

    def __init__(self, xp, session) -> None:
        self.xp, self.session, self.pending = xp, session, []

    def push(self, c, count: int) -> None:
        if self.session is None:   # local CuPy: an event, queried later
            event = self.xp.cuda.Event()
            event.record()
            self.pending.append((event, count))
        else:
            self.pending.append((self.session.value_later("float", c[0, 0]), count))
            self.session.flush()

    def _finish(self, token) -> None:
        if self.session is None:
            token.synchronize()
        else:
            self.session.result(token)

    def pop_old(self):
        if len(self.pending) < 2:
            return None
        token, count = self.pending.pop(0)
        self._finish(token)
        return (time.monotonic(), count)

    def drain(self) -> list:
        got = []
        while self.pending:
            token, count = self.pending.pop(0)
            self._finish(token)
            got.append((time.monotonic(), count))
        return got


def started(spec: dict) -> dict:
    """Say this client has warmed up (its ``ready`` file), wait for the driver's go (its
    ``go`` file: the seconds every client's start and stop move by, 0 where all were warmed
    up before the planned start), then for the start: *spec* with its start and stop as
    they stand. (A client slow to start on a loaded machine began after the others'
    scenario and shared nothing with them: the run was void.)"""
    ready, go = spec.get("ready"), spec.get("go")
    if ready is not None and go is not None:
        Path(ready).touch()
        deadline = time.monotonic() + GO_WAIT
        go_file = Path(go)
        while not go_file.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"client {spec['user']}: no go from the driver in {GO_WAIT:g} s")
            time.sleep(0.005)
        offset = float(go_file.read_text())
        spec = {**spec, "start": spec["start"] + offset, "stop": spec["stop"] + offset}
    wait_until(spec["start"])
    return spec


def wait_until(t: float) -> None:
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05) if left > 0.002 else 0)
