"""``share``'s deep company (the pool's ``share_deep_company``; arbiter/service.py
DEEP_COMPANY): a session that keeps its work backlogged (work without a break for
DEEP_SPELL: SharePolicy.deep), beside weighing company that all does too, is told so (``d``:
true) and launches a long replay whose next message already waits whole through its graphs
instead of re-running it op by op, paced (worker/stretch_replay.py, ``pacing_bound``). Users
1:2:4 that all queue deep split the device closer to their weights so (H200 runs 338-340);
beside users that wait for their values pacing stays.

The policy on the tests' own clock; the arbiter's thread with real leases over its socket,
on a clock that moves only by the tests' jumps (a loaded host makes no spell longer or
shorter); and a served pool on the NumPy device whose own counts (``memory_info()
["stretches"]``: graphed, paced) say which path each replay took."""

from __future__ import annotations

import threading
import time

import numpy as np
import zmq

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.service import Arbiter
from gpu_backend.arbiter.share import LIGHT_BURST, SharePolicy
from gpu_backend.arbiter.share_spells import DEEP_SPELL
from gpu_backend.config import PoolSettings
from gpu_backend.served import ServedPool
from gpu_backend.worker.lease import DeviceLease
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from tests.waiting import until

from .test_light_company import LIGHT_GAP, Clock, JumpingClock, _runnable


# ---------------------------------------------------------------- the policy

def test_a_backlogged_user_is_deep_after_a_spell_and_a_syncing_one_never_is():
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "ann", 1.0)
    policy.attach("s", "sam", 1.0)
    assert not policy.deep("a")                             # no work yet
    policy.want("a")
    assert not policy.deep("a")
    clock.now += DEEP_SPELL * 0.9
    assert not policy.deep("a")                             # not a whole spell yet
    clock.now += DEEP_SPELL * 0.2
    assert policy.deep("a")
    for _ in range(100):                                    # a loop that reads every 10 ms,
        policy.want("s", holding="s" in policy.admitted)    # for a second
        clock.now += 0.010
        assert not policy.deep("s")
        policy.idle("s", policy.sessions["s"].charged + 0.010)
        clock.now += 0.0003
        assert not policy.deep("s")
    assert policy.deep("a")                                 # (its spell goes on)
    policy.idle("a", policy.sessions["a"].charged + 1.0)
    assert not policy.deep("a")                             # out of work: no longer
    policy.want("a", holding="a" in policy.admitted)
    assert not policy.deep("a")                             # back: a new spell begins
    clock.now += DEEP_SPELL * 1.1
    assert policy.deep("a")
    assert not policy.deep("nobody")


def test_a_session_that_says_idle_is_shallow_at_once_though_its_work_still_runs():
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "ann", 1.0)
    policy.attach("b", "bob", 1.0)
    policy.want("a")
    policy.want("b")
    clock.now += DEEP_SPELL * 1.5
    assert policy.deep("a") and policy.deep("b")
    policy.idle("b", 0.1, ahead=0.004)                      # a read begins, 4 ms still to run
    assert policy.sessions["b"].runnable                    # (its tail: on the device)
    assert not policy.deep("b")
    policy.want("b", holding="b" in policy.admitted)        # back before its tail ended
    clock.now += DEEP_SPELL / 2
    assert not policy.deep("b")                             # a new spell, not the old one
    clock.now += DEEP_SPELL
    assert policy.deep("b")
    policy.release("b", 0.2, want=True)                     # held back with work: no break
    assert policy.deep("b")
    policy.release("b", 0.2, want=False)
    assert not policy.deep("b")


def test_each_session_of_a_user_is_judged_by_itself():
    """A user's backlogged loop does not make its notebook, reading every 10 ms, deep."""
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("loop", "ann", 1.0)
    policy.attach("notebook", "ann", 1.0)
    policy.want("loop")
    clock.now += DEEP_SPELL * 1.5
    assert policy.deep("loop")
    for _ in range(30):
        policy.want("notebook", holding="notebook" in policy.admitted)
        clock.now += 0.010
        assert not policy.deep("notebook")
        policy.idle("notebook", policy.sessions["notebook"].charged + 0.010)
    assert policy.deep("loop")


def test_no_session_is_deep_under_the_other_policies():
    clock = Clock()
    policy = make_policy("fair", clock, 0.01, 0.1)
    policy.attach("a", "ann", 1.0)
    policy.want("a")
    clock.now += 10 * DEEP_SPELL
    assert not policy.deep("a")


# ---------------------------------------------------------------- the arbiter and its leases

def _pool(deep_company: bool, clock: JumpingClock):
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"], clock=clock, light_gap=LIGHT_GAP,
                      company_idle=0.0, deep_company=deep_company).start()
    leases = [DeviceLease(ctx, arbiter.address, w, arbiter.baton_path) for w in ("wa", "wb")]
    arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
    arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
    for lease in leases:
        assert lease.acquire(0.0, lambda: False)
    return ctx, arbiter, leases


def _close(ctx, arbiter, leases) -> None:
    for lease in leases:
        lease.close()
    arbiter.stop()
    ctx.term()


class _Worker:
    """One lease's side of a worker with work: its device time reported as it grows (a
    worker with company reports every REPORT_SECONDS of it), so that the arbiter hears from
    it after a spell as it would."""

    def __init__(self, lease: DeviceLease) -> None:
        self.lease, self.busy = lease, 0.0

    def report(self) -> None:
        self.busy += 0.005
        self.lease.report(self.busy)

    def deep(self) -> bool:
        self.report()
        self.lease.read(self.busy)
        return self.lease.deep_company


def test_workers_that_both_stay_backlogged_are_told_their_company_is_deep():
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(True, clock)
    a, b = (_Worker(lease) for lease in leases)
    try:
        assert until(lambda: (a.report(), b.report(), not a.deep() and not b.deep())[-1])
        _runnable(arbiter, "sa", True)
        _runnable(arbiter, "sb", True)
        time.sleep(0.05)
        assert not a.deep() and not b.deep()                # no spell yet
        _both_told_deep(arbiter, clock, a, b)               # both with work all the while
        b.lease.idle(b.busy)                                # b out of work: a is paced again
        _runnable(arbiter, "sb", False)
        assert until(lambda: not a.deep(), seconds=10)
        assert not b.deep()
    finally:
        _close(ctx, arbiter, leases)


def _settled_shallow(arbiter: Arbiter, *workers: "_Worker") -> None:
    """After a moment for any late word of the arbiter's: none of *workers* told deep."""
    time.sleep(0.05)
    for worker in workers:
        assert not worker.deep()


def _both_told_deep(arbiter: Arbiter, clock: JumpingClock, a: "_Worker", b: "_Worker") -> None:
    _runnable(arbiter, "sa", True)
    _runnable(arbiter, "sb", True)
    clock.offset += DEEP_SPELL * 1.1
    assert until(lambda: a.deep() and b.deep(), seconds=10)


def test_a_worker_whose_company_begins_a_read_is_told_at_once_though_its_work_runs():
    """A read begins in the company (its worker's ``idle``, with work still running on the
    device): the worker beside it is paced again from that message, not at its tail's end."""
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(True, clock)
    a, b = (_Worker(lease) for lease in leases)
    try:
        _both_told_deep(arbiter, clock, a, b)
        b.lease.idle(b.busy, ahead=0.004)
        assert until(lambda: not a.deep(), seconds=10)
        assert arbiter.policies["cpu:0"].sessions["sb"].runnable   # (its tail still runs)
        _settled_shallow(arbiter, a, b)
    finally:
        _close(ctx, arbiter, leases)


def _third(ctx, arbiter: Arbiter, user: str) -> "_Worker":
    lease = DeviceLease(ctx, arbiter.address, "wc", arbiter.baton_path)
    arbiter.attach("wc", "cpu:0", "sc", user, 1.0)
    assert lease.acquire(0.0, lambda: False)
    return _Worker(lease)


def test_a_session_that_is_not_deep_joining_ends_deep_company():
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(True, clock)
    a, b = (_Worker(lease) for lease in leases)
    c = None
    try:
        _both_told_deep(arbiter, clock, a, b)
        c = _third(ctx, arbiter, "cat")                     # new: not deep for a spell
        assert until(lambda: not a.deep() and not b.deep(), seconds=10)
        assert not c.deep()
    finally:
        _close(ctx, arbiter, leases + ([c.lease] if c else []))


def test_a_users_notebook_that_reads_keeps_its_loop_and_the_others_paced():
    """ann's backlogged loop (``sa``) and bob's (``sb``) beside ann's notebook (``sc``), which
    reads every 10 ms: the notebook is never deep, so neither loop is told its company is."""
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(True, clock)
    a, b = (_Worker(lease) for lease in leases)
    c = None
    try:
        c = _third(ctx, arbiter, "ann")
        _runnable(arbiter, "sa", True)
        _runnable(arbiter, "sb", True)
        for _ in range(30):                                 # 0.3 s of the notebook's reads
            c.lease.busy_again()
            _runnable(arbiter, "sc", True)
            c.report()
            clock.offset += 0.010
            a.report(), b.report()
            c.lease.idle(c.busy)
            _runnable(arbiter, "sc", False)
        policy = arbiter.policies["cpu:0"]
        assert policy.deep("sa") and policy.deep("sb") and not policy.deep("sc")
        _settled_shallow(arbiter, a, b, c)
    finally:
        _close(ctx, arbiter, leases + ([c.lease] if c else []))


def test_a_backlogged_worker_beside_one_that_syncs_is_never_told_deep():
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(True, clock)
    a, b = (_Worker(lease) for lease in leases)
    try:
        _runnable(arbiter, "sa", True)
        for _ in range(30):                                 # b reads every 10 ms, for 0.3 s
            b.lease.busy_again()
            _runnable(arbiter, "sb", True)
            b.report()
            clock.offset += 0.010
            assert not a.deep()
            b.lease.idle(b.busy)
            _runnable(arbiter, "sb", False)
            assert not a.deep()
        assert arbiter.policies["cpu:0"].deep("sa")         # (a itself is deep)
        _settled_shallow(arbiter, a, b)
    finally:
        _close(ctx, arbiter, leases)


def test_without_deep_company_no_worker_is_told_deep():
    clock = JumpingClock()
    ctx, arbiter, leases = _pool(False, clock)
    a, b = (_Worker(lease) for lease in leases)
    try:
        _runnable(arbiter, "sa", True)
        _runnable(arbiter, "sb", True)
        clock.offset += DEEP_SPELL * 3
        for _ in range(20):
            assert not a.deep() and not b.deep()
            time.sleep(0.01)
        assert arbiter.policies["cpu:0"].deep("sa")         # (deep: only not told)
    finally:
        _close(ctx, arbiter, leases)


def test_the_pool_setting_reaches_the_arbiter():
    assert PoolSettings().company_options()["deep_company"] is True
    assert PoolSettings(share_deep_company=False).company_options()["deep_company"] is False


# ---------------------------------------------------------------- a served pool, end to end

#: replays through their graphs beside the other backlogged session that show deep company
GRAPHED = 5
#: how long a served pool's phase may take (never a timing assertion: a host two busy loops
#: and a test suite load took 40-47 s for both served tests)
PATIENCE = 180.0


def _backlogged_loop(session, m, stop: threading.Event, errors: list) -> None:
    """A GEMM loop that keeps its session backlogged, as fairness.py's GEMM users do: each
    step's value asked for later and read one step behind."""
    try:
        pending = []
        c = m
        while not stop.is_set():
            c = (m @ m) @ m
            pending.append(session.value_later("float", c[0, 0]))
            session.flush()
            if len(pending) > 2:
                session.result(pending.pop(0))
        for token in pending:
            session.result(token)
    except BaseException as exc:   # (reported by the test)
        errors.append(exc)


def _replays_beside_a_backlogged_user(deep_company: bool, seconds: float | None) -> tuple:
    """Session ``a`` in a loop that keeps it backlogged, alone first (held, then replayed
    through its graphs), then beside session ``b`` on the same device in the same kind of
    loop. Every replay in company is paced but where deep company lets it go whole
    (``GPUWB_UNPACED_REPLAY_US=0``: the NumPy device measures next to no device time, so no
    estimate reaches the 4 ms a GPU's would; light company off, so that a loop starved by
    this host is never taken for a light user). Counted from a's first replay paced in
    company (a knows its company from there). With *seconds*, both loops run that long; else
    until GRAPHED of a's replays went through their graphs. Returns a's counts then and at the
    end."""
    env = {"GPUWB_UNPACED_REPLAY_US": "0", "GPUWB_COMPANY_IDLE_MS": "60000",
           "GPUWB_SHARE_LIGHT_COMPANY": "0",
           "GPUWB_SHARE_DEEP_COMPANY": "1" if deep_company else "0"}
    host = np.random.default_rng(3).random((384, 384)) * 0.01   # (milliseconds a GEMM)
    with ServedPool("share", "cpu", env=env) as pool:
        sessions = [Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))]
        try:
            a = sessions[0]
            arrays = [module_for(a).asarray(host)]
            errors: list = []

            def run(until_true, what: str, loops: list) -> None:
                stop = threading.Event()
                threads = [threading.Thread(target=_backlogged_loop, args=(s, m, stop, errors))
                           for s, m in loops]
                for thread in threads:
                    thread.start()
                try:   # (patient: two loops of this process's threads on a loaded host)
                    assert until(lambda: bool(errors) or until_true(), seconds=PATIENCE,
                                 step=0.05), f"waited {PATIENCE} s for {what}"
                finally:
                    stop.set()
                    for thread in threads:
                        thread.join()
                assert not errors, errors

            counts = lambda: a.memory_info()["stretches"]   # noqa: E731
            run(lambda: counts()["graphed"] >= 3, "a's replays through its graphs, alone",
                [(a, arrays[0])])
            sessions.append(Session(pool.address, pool.token,
                                    settings=SessionSettings(replay_measured=False)))
            arrays.append(module_for(sessions[1]).asarray(host))
            alone = counts()
            marks: list = []

            def then() -> bool:
                now = counts()
                if not marks:
                    if now["paced"] > alone["paced"]:
                        marks.append(now)
                    return False
                if seconds is None:   # (several: not one graphed on a path of its own)
                    return now["graphed"] >= marks[0]["graphed"] + GRAPHED
                if len(marks) == 1:
                    marks.append(time.monotonic() + seconds)
                return time.monotonic() >= marks[1]
            run(then, "a replay paced beside b, then " + (
                "one through graphs" if seconds is None else f"{seconds} s"),
                list(zip(sessions, arrays)))
            return marks[0], counts()
        finally:
            for s in sessions:
                s.close()


def test_a_served_pool_runs_backlogged_replays_whole_beside_a_backlogged_user():
    before, after = _replays_beside_a_backlogged_user(True, None)
    assert after["graphed"] >= before["graphed"] + GRAPHED


def test_a_served_pool_without_the_setting_paces_every_replay_beside_a_backlogged_user():
    before, after = _replays_beside_a_backlogged_user(False, 3.0)
    assert after["paced"] > before["paced"]
    assert after["graphed"] == before["graphed"]


# ---------------------------------------------------------------- the second review's cases

def test_a_session_that_said_idle_and_released_wanting_more_begins_a_spell():
    """Its work came after its ``idle`` and before it read the yield: it gave its grant back
    wanting more, with no ``want`` (worker/pacing.py): its spell begins there."""
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "ann", 1.0)
    policy.attach("b", "bob", 1.0)
    policy.want("a")
    policy.want("b")
    policy.idle("a", 0.001)
    policy.release("a", 0.001, want=True)
    clock.now += DEEP_SPELL * 1.1
    assert policy.deep("a") and policy.deep("b")


def test_a_session_alone_until_now_begins_its_spell_with_its_company():
    """Alone, its worker said no ``idle`` at its reads: whether it waits for its values is
    not known before its first read in company."""
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "ann", 1.0)
    policy.want("a")
    clock.now += 1.0
    assert policy.deep("a")
    policy.company_began("a")
    assert not policy.deep("a")
    clock.now += DEEP_SPELL * 1.1
    assert policy.deep("a")


class _Stepped:
    """An arbiter whose thread is never started: the test steps it, a command or a worker's
    message at a time, so that what one message's handling does is seen alone."""

    def __init__(self, clock: JumpingClock) -> None:
        self.ctx = zmq.Context()
        self.arbiter = Arbiter(self.ctx, "share", ["cpu:0"], clock=clock, light_gap=LIGHT_GAP,
                               company_idle=0.0)
        self.socks: dict = {}

    def attach(self, worker: str, session: str, user: str) -> None:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, worker.encode())
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.arbiter.address)
        self.socks[worker] = sock
        self.arbiter.attach(worker, "cpu:0", session, user, 1.0)
        self.arbiter._apply_commands()

    def says(self, worker: str, msg: dict) -> None:
        """*worker*'s message, handled by the arbiter as its thread would."""
        from gpu_backend.protocol.codec import packb
        self.socks[worker].send(packb(msg))
        assert self.arbiter.sock.poll(10_000)
        self.arbiter._on_worker()

    def close(self) -> None:
        for sock in self.socks.values():
            sock.close()
        self.arbiter.stop()
        self.ctx.term()


def test_a_deadline_taken_by_another_workers_message_still_recounts_the_company():
    """A light user's burst ends (a deadline of the policy's) and the saturating worker's
    report comes before the arbiter's loop looks at its deadlines: that report's settling
    takes the deadline, so the report itself counts the company again, and the worker is
    paced from then (the light user now weighs)."""
    clock = JumpingClock()
    stepped = _Stepped(clock)
    arbiter = stepped.arbiter
    policy = arbiter.policies["cpu:0"]
    try:
        stepped.attach("wa", "sa", "ann")
        stepped.attach("wb", "sb", "ian")
        stepped.says("wa", {"t": "want"})
        for _ in range(3):                                  # ian's requests, 20 ms apart
            stepped.says("wb", {"t": "want"})
            stepped.says("wb", {"t": "idle", "busy": 0.0})
            clock.offset += 0.020
        assert not policy.weighs("sb")
        assert arbiter._paced_of["wa"] is False             # (light company)
        stepped.says("wb", {"t": "want"})                   # a request: its burst
        assert arbiter._paced_of["wa"] is False
        clock.offset += LIGHT_BURST + 0.001                 # past its burst, nobody spoke
        stepped.says("wa", {"t": "used", "busy": 0.005})    # before any look at deadlines
        assert policy.weighs("sb")
        assert arbiter._paced_of["wa"] is True
    finally:
        stepped.close()


def test_a_worker_alone_till_a_newcomer_is_not_deep_at_once():
    clock = JumpingClock()
    stepped = _Stepped(clock)
    policy = stepped.arbiter.policies["cpu:0"]
    try:
        stepped.attach("wa", "sa", "ann")
        stepped.says("wa", {"t": "want"})
        clock.offset += 1.0                                 # alone: no idle said meanwhile
        assert policy.deep("sa")
        stepped.attach("wb", "sb", "bob")
        assert not policy.deep("sa")
    finally:
        stepped.close()
