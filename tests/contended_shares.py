"""Each user's device time while another user waited, from the arbiter's decision trace
(``GPUWB_ARBITER_TRACE``, gpu_backend/arbiter/trace.py).

A weight decides shares only while users compete: when one user's client is between two
batches (on a loaded 2-core machine its thread may not run for tens of milliseconds), the
other rightly has the device alone. A share over the whole run therefore measures the host's
load as much as the arbiter (test_two_users_1_to_3_share_the_device_by_weight once read 0.30
against 0.25 ± 0.05 that way). Counted only while another user had work for the device, the
pool's own accounting measures what the weights promise; the test keeps each user's work
queued in the pool so that such stretches are most of the run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

__all__ = ["contended_seconds", "pool_device_seconds", "wait_for_device_work"]


def pool_device_seconds(sessions) -> float:
    """The device seconds the pool has counted for *sessions* so far (each one's own usage
    reports, as its status shows them): how much a test's users have had of the device,
    which a test waits for rather than for wall time (a loaded host gives the device less
    of a second)."""
    total = 0.0
    for s in sessions:
        total += sum(r["device_seconds"] for r in s.status()["sessions"] if r["session"] == s.id)
    return total


def wait_for_device_work(sessions, work: float, deadline: float,
                         given_up: Callable[[], bool] = lambda: False) -> None:
    """Wait until the pool has counted *work* device seconds for *sessions*, or the
    monotonic *deadline*, or *given_up* says so: a shares test's users run for an amount of
    the device's work, however long a loaded host takes to give it."""
    while pool_device_seconds(sessions) < work and not given_up() \
            and time.monotonic() < deadline:
        time.sleep(0.2)


def contended_seconds(trace: Path) -> dict[str, float]:
    """Per user, the device seconds its sessions reported (``used``, ``release``) while a
    session of another user had work for the device: waiting for it, or granted it (a
    preempting grant comes while the holder's last ops still drain)."""
    state: dict[str, str] = {}     # session -> "waiting" | "holding" | "idle"
    user_of: dict[str, str] = {}
    busy: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        session, user, msg = entry["session"], entry["user"], entry["msg"]
        user_of[session] = user
        kind = msg.get("t")
        if kind in ("used", "release"):
            delta = float(msg["busy"]) - busy.get(session, 0.0)
            busy[session] = float(msg["busy"])
            others_wait = any(s != session and user_of.get(s) != user and st != "idle"
                              for s, st in state.items())
            if others_wait and delta > 0:
                seconds[user] = seconds.get(user, 0.0) + delta
        if kind == "want" and state.get(session) != "holding":
            state[session] = "waiting"
        elif kind == "release":
            state[session] = "waiting" if msg.get("want") else "idle"
        for action in entry["actions"]:
            if action["a"] == "grant":
                state[action["session"]] = "holding"
    return seconds
