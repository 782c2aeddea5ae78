"""Issue 51: a holder whose batch ends with a read, nothing queued behind it, hands the device
over as the read begins (worker/pacing.py, ``Pacer.release_before_read``), saying so in its
release (``r``), and the fair policy then keeps the device for nobody: others' queued work
fills the gap while its client takes the value and sends the next batch.

Driven three ways: the policy with a fake clock (the gap rule would have held the device,
``reading`` does not); the simulated device of tests/policy_sim.py (users that sync every
few milliseconds, 1:1 and 1:2:4: the device never idles while anyone has work, and device
time goes by weight); and a served pool on the NumPy device, two and three users' syncing
loops in their own sessions, judged from the pool's own accounting (the arbiter's trace),
never from wall-clock rates, which a loaded 2-core machine would make meaningless.
"""

from __future__ import annotations

import json
import time

import pytest

from gpu_backend.arbiter.turns import FifoPolicy

from tests.policy_sim import Fair, SimSession, simulate
from tests.syncing_users import run_syncing_users


def syncing_and_waiting():
    """Users S (2 ms ops, a read at each batch's end, back 0.5 ms after it) and W (2 ms
    ops, waiting) on a fair policy whose clock is ``t[0]``. S has come back once after a
    batch, so the gap rule knows its gap (0.5 ms, shorter than W's ops: it would hold)."""
    t = [0.0]
    policy = Fair(lambda: t[0])
    policy.attach("s", "S")
    policy.attach("w", "W")
    policy.want("s")
    policy.op_seconds("w", 0.002)
    policy.want("w")
    t[0] = 0.002
    assert policy.release("s", 0.002, want=False)[0].session == "w"   # its gap not known yet
    t[0] = 0.0025
    policy.want("s")                                   # back after 0.5 ms, behind W
    t[0] = 0.008
    policy.release("w", 0.006, want=True)              # W hands over after its turn
    assert policy.holder == "s" and policy.gaps.sessions["s"].gap == pytest.approx(0.0005)
    return t, policy


def test_a_release_at_a_read_leaves_the_device_to_the_next_in_line_at_once():
    t, policy = syncing_and_waiting()
    t[0] = 0.012
    [grant] = policy.release("s", 0.006, want=False, reading=True)
    assert grant.session == "w" and policy.gaps.hold is None and policy.holder == "w"
    # S's client comes back with its next batch: it asks like anyone else, W keeps its turn
    t[0] = 0.0125
    assert [a.session for a in policy.want("s") if type(a).__name__ == "Grant"] == []
    t[0] = 0.014
    [grant] = policy.release("w", 0.008, want=True)
    assert grant.session == "s"


def test_without_a_read_the_gap_rule_still_holds():
    """A batch that ends without a read (a client that flushes and synchronises) keeps the
    gap rule of issue 38: the device is held for the session's return."""
    t, policy = syncing_and_waiting()
    t[0] = 0.012
    assert policy.release("s", 0.006, want=False) == []
    assert policy.gaps.hold is not None and policy.gaps.hold[0] == "s"


def test_fifo_takes_a_release_at_a_read_as_any_release():
    t = [0.0]
    policy = FifoPolicy(lambda: t[0])
    policy.attach("s", "S")
    policy.attach("w", "W")
    policy.want("s")
    policy.want("w")
    grants = [a for a in policy.release("s", 0.008, want=False, reading=True)
              if type(a).__name__ == "Grant"]
    assert [g.session for g in grants] == ["w"]


@pytest.mark.parametrize("weights", [(1, 1), (1, 2, 4)])
def test_syncing_users_keep_the_device_busy_and_share_it_by_weight(weights):
    """Simulated: users whose loop is four 2 ms ops and a read, back 0.5 ms after each
    batch. Handing over at the read, the device is never idle while a session has work and
    device time splits by weight within 1 %. Held through each gap instead (the gap rule,
    the pool before issue 51), the device idles while a user of 2 ms ops waits."""
    got = {}
    for reads in (True, False):
        sessions = [(SimSession(f"s{i}", f"U{i}", op=0.002, think=0.0005, batch=4, reads=reads), w)
                    for i, w in enumerate(weights)]
        dev = simulate(sessions, 6.0)
        busy = {s.sid: dev.busy_between(s.sid, 1.0, 6.0) for s, _ in sessions}
        total = sum(busy.values())
        got[reads] = dev.idle_while_wanted, total
        if reads:
            assert total == pytest.approx(5.0, abs=0.01)
            for (s, w) in sessions:
                assert busy[s.sid] / total == pytest.approx(w / sum(weights), rel=0.01), busy
    assert got[True][0] == pytest.approx(0.0, abs=1e-3)
    if len(weights) == 3:   # (two equal users alternate without a hold in the simulation)
        assert got[False][0] > 0.05, got


def _reading_releases(trace) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        if entry["msg"].get("t") == "release" and entry["msg"].get("r") is True:
            counts[entry["user"]] = counts.get(entry["user"], 0) + 1
    return counts


def _share_while_runnable(trace) -> dict[str, tuple[float, float]]:
    """Per user, from the arbiter's trace: (its part of all the device time used while it
    had work for the device, that device time). Weights promise each user at least its
    weight's part of the device whenever it has work (more while others have none): a
    syncing loop has none between its read and its next batch, and on a loaded 2-core
    machine its client's thread may not run for a while; the others rightly have the device
    then, and that time is not counted against it. Device time is counted from the reports
    (``used``, ``release``), each over the span since the session's last one, toward every
    user that had work throughout that span."""
    state: dict[str, str] = {}       # session -> "waiting" | "holding" | "idle"
    user_of: dict[str, str] = {}
    busy: dict[str, float] = {}      # session -> device seconds reported so far
    since: dict[str, float] = {}     # session -> when the span of its next report began
    idle_at: dict[str, float] = {}   # session -> when it last went idle
    got: dict[str, float] = {}
    total: dict[str, float] = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        session, user, msg, now = entry["session"], entry["user"], entry["msg"], entry["t"]
        user_of[session] = user
        kind = msg.get("t")
        if kind in ("used", "release"):
            delta = float(msg["busy"]) - busy.get(session, 0.0)
            busy[session] = float(msg["busy"])
            start = since.get(session, now)
            since[session] = now
            if delta > 0:
                for other, st in state.items():
                    if other == session or st != "idle" and idle_at.get(other, -1.0) < start:
                        total[user_of[other]] = total.get(user_of[other], 0.0) + delta
                        if user_of[other] == user:
                            got[user] = got.get(user, 0.0) + delta
        if kind == "want" and state.get(session) != "holding":
            state[session] = "waiting"
        elif kind == "release":
            state[session] = "waiting" if msg.get("want") else "idle"
            if not msg.get("want"):
                idle_at[session] = now
        for action in entry["actions"]:
            if action["a"] == "grant":
                if state.get(action["session"]) != "holding":
                    since[action["session"]] = now
                state[action["session"]] = "holding"
    return {u: (got.get(u, 0.0) / total[u], total[u]) for u in total if total[u] > 0}




@pytest.mark.parametrize("weights", [{"a": 1, "b": 1}, {"a": 1, "b": 2, "c": 4}],
                         ids=["1:1", "1:2:4"])
def test_users_that_sync_every_few_ms_get_their_weights_share(tmp_path, weights):
    """On the NumPy device: each user a loop of four N² GEMMs and a read of one element,
    in its own session, for 5 s. Their workers hand the device over at the read (the trace
    has such releases from every user), and whenever a user had work it got at least its
    weight's part of the device time the pool measured (tests/contended_shares.py's
    question, asked of loops that have one batch at most in the pool)."""
    trace = run_syncing_users(tmp_path, weights, "fair")
    reading = _reading_releases(trace)
    assert set(reading) == set(weights), reading   # every user handed over at its reads
    shares = _share_while_runnable(trace)
    assert set(shares) == set(weights), shares
    total_w = sum(weights.values())
    for u, w in weights.items():
        share, seconds = shares[u]
        assert seconds > 0.2, shares                 # hundreds of batches competed
        assert share >= w / total_w - 0.05, (u, shares, reading)


# ---------------------------------------------------------------- the worker's side
# A real lease against a peer speaking the arbiter's protocol over a real socket, and the
# NumPy device's markers (as tests/gpu_backend/test_lease_regrant.py).

@pytest.fixture
def peer(tmp_path):
    import zmq

    from gpu_backend.arbiter.baton import BatonBoard
    from gpu_backend.worker import lease as lease_module
    from gpu_backend.worker.lease import DeviceLease

    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    lease = DeviceLease(ctx, f"tcp://127.0.0.1:{port}", "w1")
    board = BatonBoard(str(tmp_path / "baton"))
    lease.baton = lease_module.Baton(board.path)
    yield router, lease, board
    lease.baton.close()
    lease.baton = None
    board.close()
    lease.sock.close(linger=0)
    router.close(linger=0)
    ctx.term()


def _granted(router, lease, pacer, **grant):
    from gpu_backend.protocol.codec import packb

    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    router.send_multipart([ident, packb({"t": "grant", **grant})])
    deadline = time.monotonic() + 2
    while not lease.pending() and time.monotonic() < deadline:
        lease.sock.poll(10)
    assert pacer._acquire(lambda: False)
    return ident


def _next_message(router, timeout_ms=2000):
    from gpu_backend.protocol.codec import unpackb

    if not router.poll(timeout_ms):
        return None
    return unpackb(router.recv_multipart()[1])


def test_a_spent_turn_runs_the_batchs_tail_and_hands_over_at_its_read(peer):
    """A holder whose turn is spent with only its batch's tail left (an index and a read:
    54 bytes of records) runs them and hands over as the read begins, saying so; with more
    of the batch left it hands over at once, as before; a preemption is never deferred."""
    import numpy as np

    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.pacing import TAIL_BYTES, Pacer

    router, lease, board = peer
    slot = board.take()
    pacer = Pacer(NumpyDevice(), lease)
    x = np.ones((64, 64))
    _granted(router, lease, pacer, g=1, q=1e-9, k=slot)   # a turn spent by its first op
    pacer.start_segment()
    x @ x
    pacer.batch_left = 54
    assert 54 <= TAIL_BYTES
    assert pacer.after_ops(1, lambda: False) and lease.holding   # the tail runs
    while (msg := _next_message(router, 50)) is not None:
        assert msg["t"] == "used"
    assert pacer.release_before_read(1, lambda: False)            # the read: hand over now
    msg = _next_message(router)
    assert msg["t"] == "release" and msg["r"] is True and msg["want"] is False
    assert not lease.holding and lease.baton._words[slot] < 1     # its work not yet passed on
    pacer.pass_baton()
    assert lease.baton._words[slot] == 1                          # ... now it is
    # more than the tail left: a spent turn hands over at once
    _granted(router, lease, pacer, g=2, q=1e-9, k=slot)
    pacer.start_segment()
    x @ x
    pacer.batch_left = 10_000
    pacer.after_ops(1, lambda: True)                              # (interrupted: no regrant wait)
    msg = _next_message(router)
    while msg is not None and msg["t"] == "used":
        msg = _next_message(router)
    assert msg["t"] == "release" and msg.get("r") is None and msg["want"] is True


def test_a_newcomer_beside_a_long_kernel_is_charged_half_of_the_overlap(peer):
    """A newcomer that gave up waiting for the last holder's drain (inside a long kernel)
    runs beside it, time-sliced: its segments are charged half while the last holder's work
    is unfinished (its baton slot not yet passed), in full once it is."""
    import numpy as np

    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.pacing import OVERLAP_SHARE, Pacer

    router, lease, board = peer
    holder_slot, my_slot = board.take(), board.take()
    pacer = Pacer(NumpyDevice(), lease)
    _granted(router, lease, pacer, g=2, q=1.0, k=my_slot, w=[holder_slot, 1], wt=0.005)
    assert lease.overlapping == [holder_slot, 1]
    x = np.ones((128, 128))

    def one_segment() -> tuple[float, float]:
        """(the segment's span by its markers, what it was charged)"""
        before = pacer.busy
        pacer.start_segment()
        x @ x
        pacer._mark(1)
        charged_from, _own, end = pacer._pending[0][:3]
        span = pacer.device.between(charged_from, end)
        pacer.harvest()
        return span, pacer.busy - before

    span, charged = one_segment()
    assert charged == pytest.approx(span * OVERLAP_SHARE)
    lease.baton.finished(holder_slot, 1)                           # the long kernel ended
    span, charged = one_segment()
    assert charged == pytest.approx(span) and lease.overlapping is None   # in full again
