"""A worker's device lease against a peer speaking the arbiter's protocol over a real
socket: a worker that hears nothing asks again (a lost grant would otherwise leave its
session waiting for ever, as a CI run once did), and a grant it has already handed
back, sent again, is not taken."""

from __future__ import annotations

import time

import pytest
import zmq

from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.worker import lease as lease_module
from gpu_backend.worker.lease import DeviceLease


@pytest.fixture
def peer():
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    lease = DeviceLease(ctx, f"tcp://127.0.0.1:{port}", "w1")
    yield router, lease
    lease.sock.close(linger=0)
    router.close(linger=0)
    ctx.term()


def _arrive(lease: DeviceLease) -> None:
    deadline = time.monotonic() + 2
    while not lease.pending() and time.monotonic() < deadline:
        lease.sock.poll(10)


def test_a_grant_handed_back_is_not_taken_again(peer):
    router, lease = peer
    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    router.send_multipart([ident, packb({"t": "grant", "g": 5})])
    _arrive(lease)
    lease.read(0.0)
    assert lease.holding and lease.grant == 5
    lease.release(0.001, want=False)
    assert unpackb(router.recv_multipart()[1])["t"] == "release"
    router.send_multipart([ident, packb({"t": "grant", "g": 5})])   # the same one, late
    _arrive(lease)
    lease.read(0.002)
    assert not lease.holding
    router.send_multipart([ident, packb({"t": "grant", "g": 6})])   # a new one
    _arrive(lease)
    lease.read(0.002)
    assert lease.holding and lease.grant == 6


def test_a_worker_that_hears_nothing_asks_again(peer, monkeypatch, capsys):
    router, lease = peer
    monkeypatch.setattr(lease_module, "REASK_SECONDS", 0.05)
    until = time.monotonic() + 0.4
    assert not lease.acquire(0.0, lambda: time.monotonic() > until)   # no grant: gives up
    wants = 0
    while router.poll(0):
        wants += unpackb(router.recv_multipart()[1])["t"] == "want"
    assert wants >= 3
    assert capsys.readouterr().err.count("asking again") == 1   # said once, for the pool's log


def test_a_holder_granted_again_and_again_still_reports_its_time(peer):
    """A lone holder reports every REPORT_ALONE_SECONDS of device time, however often it is
    granted the device anew (preempted by a returning user, then granted back): the arbiter
    counts its share from the reports."""
    router, lease = peer
    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    reports, busy, grant = [], 0.0, 0
    for _ in range(20):                               # 20 grants, 10 ms of work under each
        grant += 1
        router.send_multipart([ident, packb({"t": "grant", "g": grant})])
        _arrive(lease)
        lease.read(busy)
        busy += 0.010
        lease.report(busy)
        while router.poll(50):
            reports.append(unpackb(router.recv_multipart()[1]))
    used = [r["busy"] for r in reports if r.get("t") == "used"]
    assert len(used) >= 3 and used == sorted(used)   # 200 ms of work: a report per ~50 ms


def test_a_preempting_grant_waits_for_the_old_holder_at_most_its_patience(peer, tmp_path,
                                                                          monkeypatch):
    """A grant after a preemption names the holder's work to wait for and how long at most
    ("wt"): a holder inside one long kernel must not keep the newcomer waiting for the
    baton's whole limit. Without "wt" the baton's own limit holds."""
    from gpu_backend.arbiter.baton import BatonBoard

    router, lease = peer
    monkeypatch.setattr(lease_module, "BATON_TIMEOUT", 30.0)
    board = BatonBoard(str(tmp_path / "baton"))
    try:
        holder_slot, my_slot = board.take(), board.take()
        lease.baton = lease_module.Baton(board.path)
        lease._send({"t": "want"})
        ident, _ = router.recv_multipart()
        router.send_multipart([ident, packb({"t": "grant", "g": 3, "k": my_slot,
                                             "w": [holder_slot, 2], "wt": 0.05})])
        _arrive(lease)
        lease.read(0.0)
        assert lease.holding and lease.after == [holder_slot, 2] and lease.patience == 0.05
        began = time.perf_counter()
        lease.wait_for_previous()                 # the holder never finishes: 50 ms, not 30 s
        assert time.perf_counter() - began < 10
        lease.release(0.001, want=True)
        router.recv_multipart()
        router.send_multipart([ident, packb({"t": "grant", "g": 4, "k": my_slot,
                                             "w": [holder_slot, 2]})])
        _arrive(lease)
        lease.read(0.001)
        assert lease.holding and lease.patience == 30.0
        lease_module.Baton(board.path).finished(holder_slot, 2)
        lease.wait_for_previous()                 # finished: no wait at all
        lease.baton.close()
        lease.baton = None
    finally:
        board.close()


def test_a_quantum_counts_from_the_end_of_a_segment_run_beside_a_long_kernel(peer, tmp_path):
    """A newcomer that gave up waiting for the last holder (inside a long kernel) runs its
    first ops beside that kernel, and their segment measures part of it: its quantum starts
    after that segment, not inside it (a preempting interactive op otherwise "spent" its
    quantum in its own request and waited out the next long kernel: p99 97 ms, H100 run
    20). Real lease, real socket, the NumPy device's markers."""
    import math

    import numpy as np

    from gpu_backend.arbiter.baton import BatonBoard
    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.pacing import Pacer

    router, lease = peer
    board = BatonBoard(str(tmp_path / "baton"))
    try:
        holder_slot, my_slot = board.take(), board.take()
        lease.baton = lease_module.Baton(board.path)
        pacer = Pacer(NumpyDevice(), lease)
        lease._send({"t": "want"})
        ident, _ = router.recv_multipart()
        router.send_multipart([ident, packb({"t": "grant", "g": 2, "q": 0.002, "k": my_slot,
                                             "w": [holder_slot, 1], "wt": 0.01})])
        _arrive(lease)
        assert pacer._acquire(lambda: False)                 # gave up on the holder
        assert lease.hand_over_at == math.inf and not lease.must_hand_over(1.0)
        x = np.arange(8.0)
        pacer.start_segment()
        x + 1
        pacer._mark(1)
        pacer.harvest()
        assert lease.hand_over_at == pytest.approx(pacer.busy + 0.002)
        lease.release(pacer.busy, want=False)
        router.recv_multipart()
        lease_module.Baton(board.path).finished(holder_slot, 3)
        router.send_multipart([ident, packb({"t": "grant", "g": 4, "q": 0.002, "k": my_slot,
                                             "w": [holder_slot, 3]})])
        _arrive(lease)
        assert pacer._acquire(lambda: False)                 # drained: the quantum as granted
        assert lease.hand_over_at == pytest.approx(pacer.busy + 0.002)
        lease.baton.close()
        lease.baton = None
    finally:
        board.close()


def test_a_standing_grant_with_a_quantum_is_handed_back_once_it_is_spent(peer):
    """``share`` lets a user held back into an anticipated user's gap with a standing grant
    whose quantum is that gap (arbiter/share.py, ``_fill_gap``): the worker launches beside
    others as under any standing grant, and hands the grant back once the device time it
    measured and launched reaches the quantum."""
    router, lease = peer
    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    router.send_multipart([ident, packb({"t": "grant", "g": 7, "s": True, "q": 0.002})])
    _arrive(lease)
    lease.read(0.010)
    assert lease.holding and lease.standing and lease.grant == 7
    assert not lease.must_hand_over(0.0115)
    assert lease.must_hand_over(0.012)
    lease.release(0.012, want=True)
    sent = unpackb(router.recv_multipart()[1])
    assert sent["t"] == "release" and sent["want"] is True and sent["g"] == 7


def _sent(router) -> list[dict]:
    """What the lease sent the peer that is there to read now."""
    msgs = []
    while router.poll(200):
        msgs.append(unpackb(router.recv_multipart()[1]))
    return msgs


def test_a_lone_standing_holder_says_nothing_of_its_gaps_until_it_has_company(peer):
    """``share``, one session on the device: its reads' gaps concern nobody, so its worker
    sends no ``idle`` and no ``want`` for them (two messages a batch, each a wake of the
    pool's arbiter thread); told of company while out of work, it says ``idle`` then, and
    from then on both, as any standing holder."""
    router, lease = peer
    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    router.send_multipart([ident, packb({"t": "grant", "g": 1, "s": True, "a": True})])
    _arrive(lease)
    lease.read(0.0)
    assert lease.holding and lease.standing and lease.alone
    for batch in range(3):                  # three batches, each ending in a read
        lease.busy_again()
        lease.idle(0.001 * (batch + 1))
    assert _sent(router) == []
    router.send_multipart([ident, packb({"t": "company", "a": False})])
    _arrive(lease)
    lease.read(0.003)
    lease.idle(0.003)                       # (its idle loop, woken by the lease's socket)
    assert [m["t"] for m in _sent(router)] == ["idle"]
    lease.busy_again()
    lease.idle(0.004)
    assert [m["t"] for m in _sent(router)] == ["want", "idle"]
