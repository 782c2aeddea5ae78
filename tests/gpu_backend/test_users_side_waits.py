"""Issue 51: sharing as the users see it. Each session's worker counts the wall time its
batches waited for the device while another session held it (the pacer's ``waited``) and
the time its batches took in all (``worked``); the usage reports carry both, the usage log
keeps them, and the pool's status shows each user's "waited" fraction over the last 10 s
(``%gpu status``'s Users table, the metrics ``gpuwb_user_waited_seconds``).

A served pool on the NumPy device with two users whose loops sync every few milliseconds,
under ``fair``: both waited for the other's turns, and both fractions are what their own
counters say. Nothing here reads wall-clock rates (a loaded machine makes them meaningless):
only that waits were counted, where they belong.
"""

from __future__ import annotations

import threading
import time

import zmq

import kernelproxy
from gpu_backend.accounting.usage import read_usage
from kernelproxy.connection import door_request
from kernelproxy.modules import module_for

from tests.gpu_backend.test_users_pool import _serve, write_users
from tests.syncing_users import syncing_loop

#: the GEMMs' size: a few milliseconds each on the NumPy device
N = 160


def _arrays(session) -> tuple:
    """Two N x N arrays of *session* (made from the main thread: the module a session's
    calls go through is the session made active last)."""
    cp = module_for(session)
    return cp.random.rand(N, N), cp.random.rand(N, N)


def test_users_that_take_turns_see_their_waits_in_the_log_and_the_status(tmp_path):
    users, log = tmp_path / "users.toml", tmp_path / "usage.jsonl"
    tokens = write_users(users, {"a": {"weight": 1}, "b": {"weight": 1}})
    proc, address = _serve(tmp_path, users, log, "--policy", "fair")
    ctx = zmq.Context()
    try:
        sessions = {u: kernelproxy.connect(address, tokens[u]) for u in ("a", "b")}
        arrays = {u: _arrays(s) for u, s in sessions.items()}
        barrier, stop_at, failed = threading.Barrier(2), [time.monotonic() + 3.0], []
        threads = [threading.Thread(target=syncing_loop, args=(*arrays[u], barrier, stop_at, failed))
                   for u in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failed, failed
        # the status while the sessions are open: each user's waited fraction of the last
        # 10 s (the workers report every half second; ask until both rows have one)
        deadline = time.monotonic() + 30
        while True:
            status = door_request(ctx, address, {"t": "status", "token": tokens["a"]})
            rows = {u["user"]: u for u in status["users"]}
            if all(rows.get(u, {}).get("waited") for u in ("a", "b")) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for s in sessions.values():
            s.close()
    finally:
        proc.terminate()
        proc.wait(20)
        ctx.term()
    for user in ("a", "b"):
        waited = rows[user]["waited"]
        assert waited is not None and 0 < waited < 1, rows
    totals = {row["user"]: row for row in read_usage(log)}
    for user in ("a", "b"):
        row = totals[user]
        # each waited for the other's turns, and never longer than its batches took
        assert 0 < row["waited_s"] < row["worked_s"], totals
        assert row["device_s"] > 0 and row["ops"] > 0, totals


def test_a_user_alone_waits_for_nobody(tmp_path):
    """Alone on its device a session waits for nobody: a grant that came with no other
    session on the device and no last holder's work to wait for is the arbiter's answer,
    not a wait for another's turn, and is not counted (on a loaded host that answer took
    50 ms, half the time the user's batches took)."""
    users, log = tmp_path / "users.toml", tmp_path / "usage.jsonl"
    tokens = write_users(users, {"solo": {"weight": 1}})
    proc, address = _serve(tmp_path, users, log, "--policy", "fair")
    try:
        session = kernelproxy.connect(address, tokens["solo"])
        failed: list = []
        syncing_loop(*_arrays(session), threading.Barrier(1), [time.monotonic() + 1.5], failed)
        session.close()
        assert not failed, failed
    finally:
        proc.terminate()
        proc.wait(20)
    row = {r["user"]: r for r in read_usage(log)}["solo"]
    assert row["worked_s"] > 0 and row["waited_s"] <= row["worked_s"], row
    assert row["waited_s"] == 0.0, row   # (its grants' own latency is nobody's turn)
