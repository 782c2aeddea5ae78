"""Replies pushed ahead (worker/pushed_replies.py, kernelproxy/pushed_replies.py): a steady
loop's next reply sent by the worker before its message comes, taken by the client where the
message it sent is the one the reply answers, byte for byte.

Through real pools on the NumPy device whose workers run every replay ahead and make its
reads at once: loops answered by pushed replies give the very bits the same loop gives on a
session without replay and on a pool that pushes nothing (``GPUWB_PUSH=0``), pushed replies
whose message does not come (another message between, a scalar changed) are dropped by the
client and the message answered as ever, a session swapped out between a push and its
message has that message served by the generic path with no second reply, and a session
moved while a push waits (in the client's socket, the old worker's message never read) goes
on at its new worker with every value the loop's own."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.pool import LocalPool
from gpu_backend.worker.pushed_replies import SAVED_EAGER_MOST
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import POOL_RUNS_NUMPY, TEST_DEVICES, assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_draws_ahead import _graphed, _kept, _options, _two_draws, _walk
from .test_moves import _move, _where
from .test_steady_lane import STEPS, _carried, _changing, _hot_sync, _pause, _stepping_scalar
from .test_swap import _row, _wait


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", read_now=True) as p:
        yield p


@pytest.fixture(scope="module")
def pool_without_pushes():
    with pool_running_ahead("share", read_now=True, GPUWB_PUSH="0") as p:
        yield p


@pytest.mark.parametrize("loop", [_hot_sync, _carried, _stepping_scalar, _changing])
def test_a_loop_answered_by_pushed_replies_gives_the_bits_the_ops_give(pool, pool_without_pushes, loop):
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert_bitwise(got, want)
    plain, _again, off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got, plain)
    assert figures["push_confirmed"] + figures["push_taken"] >= STEPS // 4, figures
    assert off["pushed"] == 0 and off["lane"] >= STEPS // 4, off


def test_a_pushed_reply_whose_message_does_not_come_is_dropped_and_the_message_answered(pool):
    """``_changing`` sends another message between replays now and then, replaces its input
    and changes its scalar: the replies pushed for the replays that then did not come are
    dropped by the client (none taken twice, none taken for another message), and the
    worker's commits made ahead of them are rolled back before the message that came."""
    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, early_replay=False)) as s:
        got = _changing(module_for(s))
        figures = s.memory_info()["stretches"]
        taken = s._pushes.taken
    _again, want, _f = beside_no_replay(pool, _changing)
    assert_bitwise(got, want)
    claimed = figures["push_taken"] + figures["push_confirmed"] + figures["push_quiet"]
    assert figures["pushed"] - claimed >= 1 and taken == claimed, (figures, taken)
    # (a message committed ahead whose batch then did not come: rolled back, served as ever)
    assert figures["push_rolled"] >= 1, figures


def _swap_pool(tmp_path, devices: str, monkeypatch):
    """A pool that swaps idle sessions out (to files) and whose workers run every replay
    ahead, its reads made at once (the variables are its workers', set as it starts)."""
    monkeypatch.setenv("GPUWB_RUN_AHEAD_US", "1e9")
    monkeypatch.setenv("GPUWB_READ_AHEAD_US", "1e9")
    return LocalPool(devices=devices, swap_idle=0.3, swap_dir=tmp_path / "swap", lease_timeout=30,
                     memory_limit=256 << 20, swap_host_memory=0)


def _session(pool) -> Session:
    return Session(pool.address, pool.token,
                   settings=SessionSettings(replay_measured=False, early_replay=False))


def _until_pushed(s: Session, step, taken: int = 5, most: int = 1000) -> list:
    """*step()*'s values, called (a pause after each) until the session has taken *taken*
    pushed replies (at most *most* calls: how soon the lane arms depends on the machine's
    load, not whether); the last one's reply for the next call is pushed by then."""
    got = []
    while s._pushes.taken < taken and len(got) < most:
        got.append(step())
        _pause()
    assert s._pushes.taken >= taken, str(s.memory_info()["stretches"])
    return got


def test_a_session_swapped_out_between_a_push_and_its_message_gets_no_second_reply(tmp_path, monkeypatch):
    """The values are checked at every try; the scenario (a push outstanding when the swap
    comes, answered quietly) is asked of one of three: under a full suite's load on the
    2-core VM the lane once had no push outstanding at the swap."""
    for attempt in range(3):
        with _swap_pool(tmp_path / str(attempt), TEST_DEVICES, monkeypatch) as pool, \
                _session(pool) as s:
            cp = module_for(s)
            x = cp.arange(1000, dtype=cp.float32) / 3

            def step():
                return float((x + 1).sum())

            got = _until_pushed(s, step)
            _wait(lambda: _row(s)["swapped"], "the idle session to be swapped out")
            for _ in range(30):   # (its first message is the one pushed before the swap)
                got.append(step())
                _pause()
            figures = s.memory_info()["stretches"]
            host = x.get()
        assert got == [float((host + np.float32(1)).sum())] * len(got)
        if figures["push_quiet"] >= 1:
            break
    assert figures["push_quiet"] >= 1, figures


def test_a_session_moved_while_a_push_waits_goes_on_with_the_loops_own_values(tmp_path, monkeypatch):
    with _swap_pool(tmp_path, "cpu,cpu", monkeypatch) as pool, _session(pool) as s:
        cp = module_for(s)
        x = cp.arange(1000, dtype=cp.float32) / 3

        def step():
            return float((x + 1).sum())

        want = step()
        assert set(_until_pushed(s, step)) == {want}
        before = _where(pool, s)["device"]
        _move(pool, s)   # (the old worker's push is never the new one's)
        assert _where(pool, s)["device"] != before
        s._pushes.taken = 0
        assert set(_until_pushed(s, step)) == {want}   # (the new worker pushes too)
        assert float(x[3]) == np.float32(1.0)


def test_a_writing_step_moved_while_committed_ahead_goes_on_from_its_own_values(tmp_path, monkeypatch):
    """A step that writes its input (``w -= ...``), its next message committed ahead (its
    writes copied back), the session moved before that message comes: the old worker rolls
    the commit back before it parks the session (the input's values copied back first), so
    the new worker runs that message from the loop's own values; every value read and the
    written array are the ops'."""
    def loop(cp, s=None, pool=None):
        w = cp.arange(1000, dtype=cp.float32) / 1000
        t = cp.full(1000, 0.25, dtype=cp.float32)
        values, moved = [], []
        for i in range(80):
            w -= 0.1 * (w - t)
            values.append(float(w.sum()))
            _pause()
            if s is not None and not moved and s._pushes.taken >= 5:
                before = _where(pool, s)["device"]
                _move(pool, s)
                moved.append(_where(pool, s)["device"] != before)
        return values + [w.get()], moved

    monkeypatch.setenv("GPUWB_COMMIT_WRITES", "always")
    with _swap_pool(tmp_path, "cpu,cpu", monkeypatch) as pool:
        with _session(pool) as s:
            got, moved = loop(module_for(s), s, pool)
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
            want, _none = loop(module_for(plain))
    assert moved == [True]
    assert_bitwise(got, want)


def test_a_chain_the_old_worker_dropped_drops_none_of_the_new_workers(tmp_path, monkeypatch):
    """The old worker's push was dropped (the client sent another message than the one it
    pushed for), then the session moves: the new worker numbers its chains from 0 again,
    and its pushes are taken, not dropped as the old chain's (which left the client waiting
    for a reply the new worker had committed ahead and never sent)."""
    with _swap_pool(tmp_path, "cpu,cpu", monkeypatch) as pool, _session(pool) as s:
        cp = module_for(s)
        x = cp.arange(1000, dtype=cp.float32) / 3

        def step():
            return float((x + 1).sum())

        want, other = step(), float((x + 2).sum())
        for _ in range(20):   # (another read once the next step's reply is pushed: dropped)
            assert set(_until_pushed(s, step, taken=s._pushes.taken + 3)) == {want}
            _pause()
            assert float((x + 2).sum()) == other
            if s._pushes.void >= 0:
                break
        assert s._pushes.void >= 0, "no push was ever dropped"
        _move(pool, s)
        taken = s._pushes.taken
        assert set(_until_pushed(s, step, taken=taken + 5)) == {want}   # (the new worker's)


def test_a_loop_committed_ahead_holds_no_more_memory_the_longer_it_runs(pool):
    """A message committed ahead holds its frees back until it comes: the arrays a kept
    result takes turns in are one more (bounded), never one more every iteration."""
    def carried(cp, steps):
        x = cp.arange(1024, dtype=cp.float32) / 1024
        y = cp.full(1024, 0.25, dtype=cp.float32)
        for _ in range(steps):
            x = (x * 1.01 + y) / (x + 1.5)
            float(x.sum())
            _pause()
        return x, y

    counts = []
    for steps in (STEPS, 3 * STEPS):
        with _session(pool) as s:
            kept = carried(module_for(s), steps)
            info = s.memory_info()
            counts.append((info["arrays"], info["memory_used"]))
            figures = info["stretches"]
            del kept
        assert figures["push_confirmed"] >= steps // 4, figures
    assert counts[0] == counts[1], counts


def test_pushed_replies_over_tcp_give_the_bits_the_ops_give(pool):
    """Over the tcp:// door (ZeroMQ, as a client on another host) as over the same-host one."""
    with Session(pool.tcp_address, pool.token,
                 settings=SessionSettings(replay_measured=False, early_replay=False)) as s:
        got = _carried(module_for(s))
        figures = s.memory_info()["stretches"]
    _plain, want, _f = beside_no_replay(pool, _carried)
    assert_bitwise(got, want)
    assert figures["push_confirmed"] + figures["push_taken"] >= STEPS // 4, figures


def test_a_pushed_message_that_fails_when_it_comes_raises_its_error_at_the_next_sync(tmp_path, monkeypatch):
    """The session is swapped out with a reply pushed and not committed ahead, and its swap
    file is then cut short: that message's serving (its arrays brought back first) fails
    after its client took the pushed reply. The value taken stands (computed before the
    swap); the failure reaches the user as a clear error at a following sync point, never
    as silence or a lost session's hang."""
    from gpu_backend.protocol.errors import RemoteError

    with _swap_pool(tmp_path, TEST_DEVICES, monkeypatch) as pool, _session(pool) as s:
        cp = module_for(s)
        x = cp.arange(1000, dtype=cp.float32) / 3

        def step():
            return float((x + 1).sum())

        want = set(_until_pushed(s, step))
        _wait(lambda: _row(s)["swapped"], "the idle session to be swapped out")
        for path in (tmp_path / "swap").rglob("*"):
            if path.is_file():
                path.write_bytes(b"")   # (its arrays can no longer come back)
        got, errors = [], []
        for _ in range(4):
            try:
                got.append(step())
            except RemoteError as exc:
                errors.append(str(exc))
        assert set(got) <= want and len(got) >= 1, (got, errors)
        assert errors and all("swap file" in e for e in errors), errors


def test_a_loop_stopped_by_ctrl_c_anywhere_goes_on_with_its_own_values(pool):
    """Real SIGINTs, sent to the main thread at random moments while a pushed loop runs (in
    its ops, its wait for a pushed reply, its pause): each stop is caught as a notebook's
    kernel does — the step lost, ``cancel()`` dropping what was queued — and the loop goes
    on. Every value read is the loop's own, no reply is taken for another batch, and pushes
    go on after the stops. (A signal is sent only once the loop is back inside its ``try``:
    one landing between two tries would stop the test run itself, as it would a script.)"""
    import random
    import signal
    import threading
    import time

    rng = random.Random(51)
    main = threading.main_thread().ident
    stops = 24
    inside = threading.Event()   # (the loop is inside its try, and has been since the last stop)
    done = threading.Event()

    def interrupter() -> None:
        for _ in range(stops):
            if not inside.wait(30):
                return
            inside.clear()
            if done.wait(rng.uniform(0.0005, 0.006)):
                return
            signal.pthread_kill(main, signal.SIGINT)

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _session(pool) as s:
            cp = module_for(s)
            x = cp.arange(1000, dtype=cp.float32) / 3
            want = float((x.get() + np.float32(1)).sum())
            _until_pushed(s, lambda: float((x + 1).sum()))
            stopped, values = 0, []
            thread = threading.Thread(target=interrupter, daemon=True)
            thread.start()
            try:
                for _ in range(stops):
                    try:
                        inside.set()
                        # (until stopped: a deadline, not a count, for on a loaded machine
                        # the interrupter's thread waited seconds for its turn, and 20 000
                        # iterations ran out first, 2026-11-28)
                        deadline = time.monotonic() + 60
                        while time.monotonic() < deadline:
                            values.append(float((x + 1).sum()))
                    except KeyboardInterrupt:
                        stopped += 1
                        s.cancel()   # (what the kernel does after a stopped cell)
                    else:
                        break   # (no more stops came: counted below)
            finally:
                done.set()
                thread.join(30)
            # (pushes go on: taken again after the stops)
            after = _until_pushed(s, lambda: float((x + 1).sum()), taken=s._pushes.taken + 5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert stopped == stops, (stopped, len(values))
    assert set(values) | set(after) == {want}


def _early_loop(cp):
    """A loop long enough to go early (three ops before its read's sum, its inputs the
    same arrays each time): its values, then its input."""
    x = cp.arange(1000, dtype=cp.float32) / 7
    w = cp.full(1000, 0.5, dtype=cp.float32)
    values = []
    for _ in range(STEPS):
        y = x * w + 0.25
        values.append(float((y * y).sum()))
        _pause()
    return values + [x.get()]


def _early_figures(pool, **settings) -> tuple:
    """``_early_loop`` on a session of these settings: its values, the replays its client
    sent early, and the worker's stretch figures."""
    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, **settings)) as s:
        got = _early_loop(module_for(s))
        return got, s.stretches.figures()["early"], s.memory_info()["stretches"]


def test_a_loop_that_went_early_goes_whole_where_the_lane_would_push_its_replies(pool):
    """Its early replays answered by the worker's lane, whose replies say it would push them
    (``L``), the loop's runs go whole and their replies come pushed: the same bits as without
    replay and as a session that keeps sending early (``lane_over_early=False``), which is
    pushed nothing."""
    _got, want, _f = beside_no_replay(pool, _early_loop)
    got, sent_early, figures = _early_figures(pool)
    assert_bitwise(got, want)
    # (early until the lane said so: how soon depends on the machine's load, not whether)
    assert figures["push_confirmed"] + figures["push_taken"] >= 5, figures
    assert 1 <= sent_early < STEPS, (sent_early, figures)
    kept, kept_early, theirs = _early_figures(pool, lane_over_early=False)
    assert_bitwise(kept, want)
    assert kept_early >= STEPS // 2 and theirs["push_confirmed"] + theirs["push_taken"] == 0, \
        (kept_early, theirs)


def test_a_plan_sent_whole_for_the_lane_goes_early_again_where_no_push_comes(pool):
    """The early plan's own rule, on a held loop's real plan: told ``L`` it stops sending
    early; LANE_PATIENCE runs sent whole with no push taken send it early again; ``L``
    followed LANE_TRIES times with no push between is ignored after; a push taken resets."""
    from kernelproxy.early_replay import LANE_PATIENCE, LANE_TRIES

    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, lane_over_early=False)) as s:
        _early_loop(module_for(s))
        plan = next(t.early_plan for t in s.stretches.templates.held.values() if t.early_plan)
    inputs, params = plan.last
    assert plan.observe(inputs, params) is not None   # (early: nothing varies)
    for _ in range(LANE_TRIES):
        plan.lane_would_push()
        assert plan.lane and plan.observe(inputs, params) is None
        for _ in range(LANE_PATIENCE + 1):
            plan.sent_whole()
        assert not plan.lane and plan.observe(inputs, params) is not None
    plan.lane_would_push()   # (followed LANE_TRIES times, no push between: ignored)
    assert not plan.lane and plan.observe(inputs, params) is not None
    plan.pushed()
    plan.lane_would_push()
    assert plan.lane and plan.observe(inputs, params) is None


def _in_place(cp):
    """A step that writes its input in place (``w -= ...``), its sum read each time, and now
    and then another message between (a read of another array)."""
    w = cp.arange(1000, dtype=cp.float32) / 1000
    t = cp.full(1000, 0.25, dtype=cp.float32)
    values = []
    for i in range(STEPS):
        w -= 0.1 * (w - t)
        values.append(float(w.sum()))
        if i % 23 == 11:
            values.append(float(t[i]))
        _pause()
    return values + [w.get()]


def _slice_assigned(cp):
    """heat2d's shape in 1-D: a slice of the input assigned from its neighbours."""
    u = cp.sin(cp.arange(512, dtype=cp.float32) / 20)
    values = []
    for _ in range(STEPS):
        u[1:-1] = u[1:-1] + 0.2 * (u[:-2] - 2 * u[1:-1] + u[2:])
        values.append(float(cp.abs(u).max()))
        _pause()
    return values + [u.get()]


def _own_results_written(cp):
    """The stencil's shape: a copy made in the step and written in place, the input not."""
    u = cp.cos(cp.arange(512, dtype=cp.float32) / 30)
    state = [u]
    values = []
    for _ in range(STEPS):
        v = state[0].copy()
        v[1:-1] += 0.1 * (v[:-2] - v[1:-1])
        state[0] = v
        values.append(float(v.sum()))
        _pause()
    return values + [state[0].get()]


@pytest.fixture(scope="module")
def pool_committing_writes():
    """Steps that write their inputs committed ahead whatever their device time (``always``:
    the NumPy device's steps here are far shorter than COMMIT_WRITES_MIN_SECONDS)."""
    with pool_running_ahead("share", read_now=True, GPUWB_COMMIT_WRITES="always") as p:
        yield p


@pytest.fixture(scope="module")
def pool_committing_writes_when_they_come():
    with pool_running_ahead("share", read_now=True, GPUWB_COMMIT_WRITES="0") as p:
        yield p


@pytest.mark.parametrize("loop", [_in_place, _slice_assigned])
def test_a_step_that_writes_its_input_is_committed_ahead_and_its_writes_undone_when_rolled_back(
        pool_committing_writes, pool_without_pushes, loop):
    """The lane takes a step that writes its input: its run ahead's writes wait in its
    graphs' buffers. Its reply pushed, its message is committed ahead: the input's values
    copied aside, then its writes copied back, and the next step run ahead at once. Another
    message between (``_in_place``'s read of another array, and each loop's last read)
    rolls the commit back, its input's values copied back first: the same bits as without
    replay and without pushes, the written array read at the end included."""
    got, want, figures = beside_no_replay(pool_committing_writes, loop, early_replay=False)
    assert_bitwise(got, want)
    plain, _again, _off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got, plain)
    assert figures["push_confirmed"] >= STEPS // 4 and figures["push_rolled"] >= 1, figures
    if loop is _in_place:
        assert figures["push_rolled"] >= 3, figures   # (a read between every 23 steps)


@pytest.mark.parametrize("loop", [_in_place, _slice_assigned])
def test_gpuwb_commit_writes_0_commits_a_writing_step_when_its_message_comes(
        pool_committing_writes_when_they_come, loop):
    """Off (``0``, the benchmarks' side ``nocommitwrites``): a step that writes its inputs is
    pushed but committed only when its message comes, as before; the same bits. (On, the
    default, that is so for a step whose device time is under COMMIT_WRITES_MIN_SECONDS:
    the NumPy device's time is the host's, so which side of it these steps fall on is not
    a test's to decide; run 237 measures it on a GPU.)"""
    got, want, figures = beside_no_replay(pool_committing_writes_when_they_come, loop,
                                          early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_taken"] >= STEPS // 4 and figures["push_confirmed"] == 0, figures


#: elements of the long writing steps below: each step's time on the NumPy device (the
#: host's) is well over COMMIT_WRITES_MIN_SECONDS, on any machine
LONG_STEP = 200_000


def _long_writing_step(cp):
    """A step that writes its input, long enough on the NumPy device to be committed ahead
    under the defaults (the control of the test below)."""
    y = cp.arange(LONG_STEP, dtype=cp.float64) / LONG_STEP
    x = cp.zeros(LONG_STEP)
    out = []
    for _ in range(STEPS // 2):
        x += y * 0.5
        out.append(float(x.sum()))
        _pause()
    return out, x.get()


def _long_drawing_walk(cp):
    """The random walk of ``programs.py``: a ``RandomState``'s draw (eager, between the
    step's graphs) added in place, as long a step as the control's."""
    rs = cp.random.RandomState(64)
    x = cp.zeros(LONG_STEP)
    out = []
    for _ in range(STEPS // 2):
        x += rs.standard_normal(LONG_STEP) * 0.1
        out.append(float(x.sum()))
        _pause()
    return out, x.get()


def _small_walk_of_long_draws(cp):
    """A walk of 1 000 walkers, each step's moves summed from a long draw (as long as the
    walk above): a step that draws eagerly and writes only 8 KB."""
    rs = cp.random.RandomState(65)
    x = cp.zeros(1000)
    out = []
    for _ in range(STEPS):
        x += rs.standard_normal(LONG_STEP).reshape(LONG_STEP // 1000, 1000).sum(axis=0) * 0.01
        out.append(float(x.sum()))
        _pause()
    return out, x.get()


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="the steps pass COMMIT_WRITES_MIN_SECONDS on the "
                    "NumPy device (its time is the host's), not on a GPU: replay_sync.py's walk_step "
                    "and programs.py's random walk measure the rule there")
def test_a_writing_step_that_draws_eagerly_is_committed_ahead_only_where_it_writes_little(pool):
    """Under the defaults a step that writes its inputs is committed ahead only where its
    measured device time is at least COMMIT_WRITES_MIN_SECONDS; one that runs eager ops
    between its graphs (a ``RandomState``'s draw: its measured span holds the worker's time
    issuing it) only where it writes at most SAVED_EAGER_MOST, for its copy aside is the
    worker's time and grows with the bytes (H200 runs 250 and 254: a 4 MB walk 20-27 %
    slower committed ahead, an 8 KB one 1.7x faster). The control, as long a step with no
    draw, is committed ahead; the walk of 1.6 MB is not; the 8 KB walk of as long draws
    is. Each gives the ops' bits."""
    assert LONG_STEP * 8 > SAVED_EAGER_MOST >= 1000 * 8
    got, want, figures = beside_no_replay(pool, _long_writing_step, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_confirmed"] >= STEPS // 8, figures
    got, want, figures = beside_no_replay(pool, _long_drawing_walk, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_taken"] >= STEPS // 8 and figures["push_confirmed"] == 0, figures
    got, want, figures = beside_no_replay(pool, _small_walk_of_long_draws, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_confirmed"] >= 5 and figures["push_taken"] == 0, figures


def _drawing(kind: str):
    """A random walk drawing every step from a ``RandomState`` (``state``), the module's
    functions (``module``: the global RandomState) or a ``Generator`` (``generator``: its
    state copied, not journaled), its position carried; now and then another read between,
    so that the step committed ahead with its draws is rolled back and its draws taken
    back. Returns the values read, the walk, and the generator's next draws."""
    def loop(cp):
        if kind == "state":
            gen = cp.random.RandomState(61)
        elif kind == "generator":
            gen = cp.random.default_rng(62)
        else:
            cp.random.seed(63)
            gen = cp.random
        x = cp.zeros(300)
        out = []
        for i in range(STEPS):
            x = x + gen.standard_normal(300)
            out.append(float(x.sum()))
            if i % 13 == 6:
                out.append(float(x[7]))   # (another message: the commit ahead rolled back)
            _pause()
        return out, x.get(), gen.standard_normal(5).get()
    loop.__name__ = f"_drawing_{kind}"
    return loop


@pytest.mark.parametrize("kind", ["state", "module", "generator"])
def test_a_step_that_draws_is_committed_ahead_and_its_draws_taken_back_when_rolled_back(pool, pool_without_pushes, kind):
    """A step that draws is committed ahead of its message, its draws tentative
    (worker/draw_journal.py): confirmed when its message comes, taken back when another
    message comes first (the generator made again from its journal as it was, or a
    Generator's state put back), so that every draw after is the one the loop makes
    without replay and without pushes."""
    loop = _drawing(kind)
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert_bitwise(got[0], want[0])
    assert_bitwise(got[1:], want[1:])
    plain, _again, _off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got[1:], plain[1:])
    assert figures["push_confirmed"] >= 1 and figures["push_rolled"] >= 1, figures


def test_a_step_that_writes_only_arrays_it_made_is_committed_ahead(pool):
    got, want, figures = beside_no_replay(pool, _own_results_written, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_confirmed"] >= STEPS // 4, figures


def test_a_writing_step_swapped_out_between_its_push_and_its_message_loses_nothing(tmp_path, monkeypatch):
    """A step that writes its input, its reply pushed and its message committed ahead, the
    session swapped out before the message comes: the commit is rolled back first (the
    input's values copied back from the device, before they move), and the message is
    served by the generic path from the arrays brought back, quietly; every value and the
    written array are the ops'."""
    swapped = []

    def loop(cp, s=None):
        w = cp.arange(1000, dtype=cp.float32) / 1000
        t = cp.full(1000, 0.25, dtype=cp.float32)
        values = []
        for i in range(120):
            w -= 0.1 * (w - t)
            values.append(float(w.sum()))
            _pause()
            # (once its replies come pushed — how soon depends on the machine's load —, its
            # next one is pushed and its message not sent: the session swapped out now)
            if s is not None and not swapped and s._pushes.taken >= 5:
                _wait(lambda: _row(s)["swapped"], "the idle session to be swapped out")
                swapped.append(i)
        return values + [w.get()]

    monkeypatch.setenv("GPUWB_COMMIT_WRITES", "always")
    with _swap_pool(tmp_path, TEST_DEVICES, monkeypatch) as pool:
        with _session(pool) as s:
            got = loop(module_for(s), s)
            figures = s.memory_info()["stretches"]
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
            want = loop(module_for(plain))
    assert_bitwise(got, want)
    assert swapped and figures["push_rolled"] >= 1 and figures["push_quiet"] >= 1, figures


# ------------------------------------------------------------ reads deferred (GPUWB_DEFER_READS)
# A pushable run ahead's closing reads wait while its client's next message is already here
# (worker/steady_lane.py, ``_read_ahead``): made once that message is confirmed, before the
# reply they answer is pushed. Whether a message waits is the host's timing; ``always``
# defers them at every run ahead, so these loops take that path on a host of any speed.

@pytest.fixture(scope="module")
def pool_deferring():
    with pool_running_ahead("share", read_now=True, GPUWB_DEFER_READS="always") as p:
        yield p


@pytest.mark.parametrize("loop", [_hot_sync, _carried, _stepping_scalar, _changing])
def test_a_loop_whose_reads_wait_for_its_next_message_gives_the_bits_the_ops_give(
        pool_deferring, pool_without_pushes, loop):
    got, want, figures = beside_no_replay(pool_deferring, loop, early_replay=False)
    assert_bitwise(got, want)
    plain, _again, _off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got, plain)
    # (its reads deferred, and its replies pushed all the same: read once the message came)
    assert figures["reads_deferred"] >= STEPS // 4, figures
    assert figures["push_confirmed"] + figures["push_taken"] >= STEPS // 4, figures


@pytest.mark.parametrize("loop", [_walk, _options, _two_draws, _kept, _graphed],
                         ids=["walk", "own-state", "two-draws", "kept", "generator-in-graphs"])
def test_a_drawing_loop_whose_reads_wait_draws_the_numbers_of_no_replay(pool_deferring, loop):
    """A drawing loop (the worker's pace on a GPU, where the deferral pays: H200 run 202):
    its draws run ahead and committed before its message comes, their reads made after the
    message before it is confirmed, and a run ahead dropped with its reads still waiting (a
    scalar that jumps, the loop's end) undone from the generators' journals."""
    got, want, figures = beside_no_replay(pool_deferring, loop, early_replay=False)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 1, figures
    # (a step that writes its input — the walk's ``x +=`` — whose device time is short is
    # committed only when its message comes, so its next step is run ahead only once that
    # message is taken: its reads then wait for nothing, and are not counted)
    if loop is not _walk:
        assert figures["reads_deferred"] >= 1, figures


def test_gpuwb_defer_reads_0_reads_at_once_after_the_launch(pool_without_pushes):
    """Off (``0``; the benchmarks' side ``nodefer``): never deferred; and with pushes off,
    none is either (nothing is pushed that a read could wait for)."""
    with pool_running_ahead("share", read_now=True, GPUWB_DEFER_READS="0") as off:
        got, want, figures = beside_no_replay(off, _carried, early_replay=False)
    assert_bitwise(got, want)
    assert figures["reads_deferred"] == 0 and figures["pushed"] >= STEPS // 4, figures
    _got, _want, plain = beside_no_replay(pool_without_pushes, _carried, early_replay=False)
    assert plain["reads_deferred"] == 0, plain


# ---------------------------------------------------------------- committed before the reads
# A device-bound step whose reads wait for the client's message is committed ahead first,
# the device still running it, then read, pushed, and the next step run ahead
# (worker/server_replies.py ``_commit_then_read``). ``always`` takes that path whatever the
# step's time (the NumPy device's steps are far under COMMIT_WRITES_MIN_SECONDS), with the
# reads deferred at every run ahead and writing steps committed ahead.

@pytest.fixture(scope="module")
def pool_committing_first():
    with pool_running_ahead("share", read_now=True, GPUWB_DEFER_READS="always",
                            GPUWB_COMMIT_FIRST="always", GPUWB_COMMIT_WRITES="always") as p:
        yield p


@pytest.mark.parametrize("loop", [_hot_sync, _carried, _stepping_scalar, _changing, _in_place,
                                  _slice_assigned, _two_draws, _graphed],
                         ids=["hot-sync", "carried", "stepping-scalar", "changing", "in-place",
                              "slice-assigned", "two-draws", "generator-in-graphs"])
def test_a_step_committed_before_its_reads_gives_the_bits_the_ops_give(
        pool_committing_first, pool_without_pushes, loop):
    """Committed ahead before its reads are made: the same bits as without replay and
    without pushes — a loop-carried array, a scalar that steps, another message between and
    an input replaced (the commit rolled back), a step that writes its input in place or
    through a slice (its values copied aside first), draws (tentative, taken back by a
    roll-back)."""
    got, want, figures = beside_no_replay(pool_committing_first, loop, early_replay=False)
    assert_bitwise(got, want)
    plain, _again, _off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got, plain)
    assert figures["push_first"] >= 1, figures
    if loop in (_hot_sync, _carried, _stepping_scalar, _in_place, _slice_assigned):
        assert figures["push_first"] >= STEPS // 4 and figures["push_confirmed"] >= STEPS // 4, figures


def _overflowing_in_place(cp):
    """A count written in place goes round 1, 2, 3, 4, 0; the value read is infinite when it
    is 4, and ``int`` of it fails in the worker at every fifth step."""
    y = cp.zeros(1, dtype=cp.float64)
    big = cp.full(1, cp.inf)
    out = []
    for _ in range(STEPS):
        y += 1.0
        y %= 5.0
        try:
            out.append(int((big ** ((y > 3.0) * 1.0) + y).sum()))   # (1 + y, or inf)
        except OverflowError as exc:
            out.append(type(exc).__name__)
        _pause()
    return out, [float((y + 1).sum())]


def test_a_read_that_fails_after_its_step_was_committed_first_takes_the_commit_back(
        pool_committing_first):
    """A step committed before its reads, whose read then fails: the commit is taken back
    (its in-place writes copied back from the values kept aside) and nothing pushed, so its
    message is served as ever and raises there; the loop goes on with its own values."""
    got, want, figures = beside_no_replay(pool_committing_first, _overflowing_in_place,
                                          early_replay=False)
    assert got[0] == want[0] == [2, 3, 4, "OverflowError", 1] * (STEPS // 5)
    assert_bitwise(got[1], want[1])
    # (the lane arms again a few steps after each failure, and its first step committed
    # first is the failing one: the path taken back, each time)
    assert figures["push_first_undone"] >= 1, figures


def test_gpuwb_commit_first_0_reads_and_pushes_before_it_commits():
    """Off (``0``; the benchmarks' side ``nocommitfirst``): never committed before the reads.
    (On, the default, only a step of at least COMMIT_WRITES_MIN_SECONDS of device time is:
    the NumPy device's time is the host's, so which side of it a step falls on is not a
    test's to decide; a GPU run measures it.)"""
    with pool_running_ahead("share", read_now=True, GPUWB_DEFER_READS="always",
                            GPUWB_COMMIT_FIRST="0") as off:
        got, want, figures = beside_no_replay(off, _carried, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_first"] == 0 and figures["push_confirmed"] >= STEPS // 4, figures
