"""A small upload inside a held stretch (docs/stretch-replay.md, "An upload inside a held
stretch"): a loop that uploads its minibatch's indices each step is one stretch, its data
a frame of each replay's message, run between the worker's graphs.

Each loop runs on four sessions of the suite's pool (the fast path with its compiled
operators, without the fast path, with replay off, and the fast path on its Python methods
alone) and on the reference module (NumPy in CI, local CuPy on a GPU with
``GPUWB_TEST_DEVICES=auto GPUWB_REFERENCE=cupy``); the results are compared bitwise.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol.errors import ProtocolError
from gpu_backend.protocol.stretches import REPEATS
from kernelproxy.modules import module_for
from kernelproxy.session import INLINE_BYTES, Session
from kernelproxy.settings import SessionSettings

from ..differential import POOL_RUNS_NUMPY, assert_bitwise, reference_module, to_host
from ..quiet_gc import no_collection
from ..run_ahead_sessions import pool_running_ahead
from ..waiting import until

#: iterations of a loop: held after REPEATS, answered from its template from the next on
STEPS = 16
#: runs answered from the template at least (the first iteration differs: no frees of an
#: earlier one; the first held sighting goes as ops)
FAST = STEPS - REPEATS - 3


@pytest.fixture
def sessions(pool):
    """The fast path (compiled operators where built), no fast path, no replay, and the
    fast path on its Python methods alone; each loop its own (held stretches afresh)."""
    made = [Session(pool.address, pool.token, settings=settings) for settings in (
        SessionSettings(replay_measured=False),
        SessionSettings(replay_measured=False, fast_path=False),
        SessionSettings(graphs=False),
        SessionSettings(replay_measured=False, compiled=False))]
    yield made
    for s in made:
        s.close()


def _figures(session) -> dict:
    return session.stretches.figures() if session.stretches is not None else {}


def _run(sessions, loop) -> list[dict]:
    """*loop(xp, session)* on the reference module (session None) and on each session: the
    results compared bitwise; each session's replay figures over the loop."""
    expected = to_host(loop(reference_module(), None))
    figures = []
    for session in sessions:
        before = _figures(session)
        with no_collection():
            got = to_host(loop(module_for(session), session))
        assert_bitwise(expected, got)
        after = _figures(session)
        figures.append({k: after[k] - before.get(k, 0) for k in after})
    return figures


def _batches(session) -> int:
    return session._batch if session is not None else 0


def _sgd(xp, session, steps=STEPS, batch=16, change_at=None, dtype=np.int64, messages=None):
    """Minibatch SGD as benchmarks/programs.py's ``sgd_minibatch`` writes it: each step
    uploads its indices, gathers rows by them, reads its loss, updates the weights. At step
    *change_at* the minibatch is one row shorter (another shape of upload). *messages*:
    the batches sent over the last eight steps, appended."""
    rng = np.random.default_rng(5)
    data = xp.asarray(rng.normal(0, 1, (64, 8)).astype(np.float32))
    target = xp.asarray(rng.normal(0, 1, 64).astype(np.float32))
    w = xp.zeros(8, dtype=xp.float32)
    losses = []
    mark = None
    for step in range(steps):
        if step == steps - 8:
            mark = _batches(session)
        size = batch - 1 if step == change_at else batch
        idx = xp.asarray(rng.integers(0, 64, size).astype(dtype))
        xb, yb = data[idx], target[idx]
        err = xb @ w - yb
        losses.append(float((err * err).mean()))
        w -= 0.05 * (xb.T @ err) / size
    if messages is not None and session is not None:
        messages.append(_batches(session) - mark)
    return losses + [w]


def test_a_step_that_uploads_its_minibatch_is_one_stretch_replayed_through_graphs(sessions):
    """The upload no longer cuts the step: one message a step once held, answered from its
    template, each replay run through the worker's graphs, the results bitwise."""
    messages: list = []
    figures = _run(sessions, lambda xp, s: _sgd(xp, s, messages=messages))
    fast, nofast, off, python = figures
    assert fast["fast"] >= FAST and python["fast"] >= FAST and nofast["fast"] == 0
    for held in (fast, nofast, python):
        assert held["replays"] >= FAST and held["not_graphed"] == 0, held
    assert off.get("replays", 0) == 0
    # (each of the last eight steps one batch: the stretch's replay with its data)
    assert messages[0] == 8 and messages[1] == 8 and messages[3] == 8


@pytest.mark.parametrize("kind", [np.float32, np.float64, np.int32, np.complex64, np.bool_])
def test_a_numpy_number_uploaded_each_step_is_data_of_one_stretch(sessions, kind):
    """``cupy.asarray(np.float32(lr))`` and ``cupy.array(np.int32(k), ndmin=1)`` each step,
    its value changing: uploaded as a 0-d array's data, not a literal of the stretch's key,
    so the step is one held stretch answered from its template (a literal made a stretch a
    value, none replayed); the same 0-d arrays and values as the reference's."""
    def loop(xp, session):
        x = xp.arange(12, dtype=xp.float32)
        out = []
        for step in range(STEPS):
            value = kind(step % 5 + 1)
            scale = xp.asarray(value)
            shifted = xp.array(value, ndmin=1)
            out.append(float(((x * scale).real.astype(xp.float32) + shifted.real).sum()))
        # (the arrays as CuPy makes them: 0-d and 1-d, of the number's dtype)
        out += [scale.ndim, shifted.ndim, np.dtype(scale.dtype).num, np.dtype(shifted.dtype).num]
        return out
    figures = _run(sessions, loop)
    fast, nofast, off, python = figures
    for held in (fast, nofast, python):
        assert held["replays"] >= FAST and held["not_graphed"] == 0, held
    assert off.get("replays", 0) == 0


def test_the_host_array_may_be_written_again_once_uploaded(sessions):
    """CuPy copies an upload at once: the loop refills and then spoils one host buffer
    each step, after its upload and before the step's read, and loses nothing."""
    def loop(xp, session):
        rng = np.random.default_rng(8)
        data = xp.asarray(rng.random((32, 4), dtype=np.float32))
        host = np.empty(8, dtype=np.int64)
        sums = []
        for step in range(STEPS):
            host[:] = rng.integers(0, 32, 8)
            idx = xp.array(host)         # (NumPy's asarray would not copy)
            host[:] = 31 - step          # (spoiled after the upload: the step must not see it)
            sums.append(float((data[idx] * (1.0 + step)).sum()))
        return sums

    _run(sessions, loop)


def test_each_runs_uploaded_array_is_its_own_when_kept(sessions):
    """Every step's uploaded indices, and the rows gathered by them, kept to the end:
    each replay's are arrays of their own, never a later replay's buffer."""
    def loop(xp, session):
        rng = np.random.default_rng(9)
        data = xp.asarray(rng.random((32, 4), dtype=np.float32))
        kept = []
        for step in range(STEPS):
            idx = xp.asarray(rng.integers(0, 32, 6))
            rows = data[idx] + step
            kept.append((idx, rows))
            float(rows.sum())
        return [a for pair in kept for a in pair]

    _run(sessions, loop)


@pytest.mark.parametrize("change_at", [REPEATS + 1, REPEATS + 4, STEPS - 1])
def test_an_upload_of_another_shape_misses_its_template_and_loses_nothing(sessions, change_at):
    """At the held sighting, inside the held run, at the last step: a shorter minibatch
    misses the template at its upload; that step goes as ops, the rest as before."""
    _run(sessions, lambda xp, s: _sgd(xp, s, change_at=change_at))


def test_an_upload_of_another_dtype_misses_its_template_and_loses_nothing(sessions):
    def loop(xp, session):
        rng = np.random.default_rng(10)
        data = xp.asarray(rng.random((32, 4), dtype=np.float32))
        sums = []
        for step in range(STEPS):
            dtype = np.int32 if step in (REPEATS + 2, REPEATS + 3) else np.int64
            idx = xp.asarray(rng.integers(0, 32, 8).astype(dtype))
            sums.append(float(data[idx].sum()))
        return sums

    _run(sessions, loop)


def test_an_upload_of_structures_is_answered_from_its_template(sessions):
    """A structured array uploaded each step after an op (its dtype travels as a map of its
    parts): keyed and matched alike, so its run is answered from the template too. (As a
    stretch's first op it is not: a run starts only at an op named by a string.)"""
    dt = np.dtype([("a", "<i4"), ("b", "<f8")], align=True)   # (CuPy reads aligned fields only)

    def loop(xp, session):
        rng = np.random.default_rng(15)
        base = xp.arange(4, dtype=xp.float64)
        out = []
        for step in range(STEPS):
            host = np.zeros(4, dt)
            host["a"], host["b"] = rng.integers(0, 9, 4), rng.random(4)
            scaled = base * 1.5
            rows = xp.asarray(host)
            out.append(float((rows["b"] * scaled).sum()))
        return out

    figures = _run(sessions, loop)
    assert figures[0]["fast"] >= FAST and figures[3]["fast"] >= FAST


def test_two_uploads_in_one_step_and_one_before_any_op(sessions):
    """A step that begins with an upload (the stretch's first op) and uploads twice: their
    data travel in their order."""
    def loop(xp, session):
        rng = np.random.default_rng(11)
        data = xp.asarray(rng.random((32, 4), dtype=np.float32))
        out = []
        for step in range(STEPS):
            scale = xp.asarray(rng.random(4, dtype=np.float32))
            idx = xp.asarray(rng.integers(0, 32, 5))
            out.append(float((data[idx] * scale).sum()))
        return out

    figures = _run(sessions, loop)
    assert figures[0]["fast"] >= FAST and figures[0]["not_graphed"] == 0


def test_a_loop_with_no_sync_point_that_uploads_each_step(sessions):
    """No read in the loop (kernelproxy/loop_cuts.py cuts it into pieces of whole
    iterations): each piece's uploads travel with it, whether it is answered from its
    template or goes as ops."""
    def loop(xp, session):
        rng = np.random.default_rng(14)
        data = xp.asarray(rng.random((32, 4), dtype=np.float32))
        acc = xp.zeros(4, dtype=xp.float32)
        for step in range(300):
            idx = xp.asarray(rng.integers(0, 32, 4))
            acc = acc * 0.99 + data[idx].sum(axis=0)
        return [acc]

    _run(sessions, loop)


def test_a_large_upload_still_ends_the_stretch_before_it(sessions):
    """An upload of INLINE_BYTES or more travels at once, zero-copy, and cuts the step in
    two stretches that repeat (docs/stretch-replay.md, "Uploads inside a loop")."""
    n = INLINE_BYTES // 8 + 16

    def loop(xp, session):
        rng = np.random.default_rng(12)
        w = xp.zeros(n, dtype=xp.float64)
        out = []
        for step in range(STEPS):
            w = w * 0.5 + 1.0
            big = xp.asarray(rng.random(n))
            out.append(float((w * big).sum()))
        return out + [w]

    figures = _run(sessions, loop)
    assert figures[0]["fast"] >= 2 * FAST


@pytest.mark.parametrize("how", ["array", "set"])
def test_a_large_upload_from_a_reused_buffer_is_sent_before_the_caller_writes_it(sessions, how):
    """An upload of INLINE_BYTES or more goes zero-copy: sent (and let go of) before it
    returns, never kept for a replay, so the caller may fill its buffer again at once —
    ``cupy.array(host)`` or ``dev.set(host)`` as the step's first op, the buffer spoilt
    after it (a review found the first form of this change sending it with the replay)."""
    n = INLINE_BYTES // 8 + 16
    for session in sessions:
        cp = module_for(session)
        host, dev = np.empty(n), cp.zeros(n)
        for step in range(STEPS):
            host[:] = step + 1.0
            if how == "array":
                big = cp.array(host)
            else:
                dev.set(host)
                big = dev * 1.0
            host[:] = -1.0
            assert float(big.sum()) == (step + 1.0) * n, (session.settings, step)


def test_a_replay_without_its_uploads_data_is_refused_and_the_session_goes_on(pool):
    """A replay whose message lacks the data frame of its stretch's upload (a client's bug,
    or a hostile one): a ProtocolError for that step; the session then serves as ever."""
    session = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
    cp = module_for(session)
    real_send = session.link.send
    dropped = []

    def send(frames, track=False):   # (the next replay with data goes without it)
        if dropped == [0] and len(frames) == 2:
            dropped[0] = 1
            frames = frames[:1]
        return real_send(frames, track=track)

    try:
        session.link.send = send
        rng = np.random.default_rng(13)
        data = cp.asarray(rng.random((32, 4), dtype=np.float32))
        for step in range(STEPS):
            idx = cp.asarray(rng.integers(0, 32, 8))
            value = data[idx].sum()
            if step == STEPS - 4:
                assert _figures(session)["held"] >= 1
                dropped.append(0)
                dropped[:] = [0]
                with pytest.raises(ProtocolError, match="data frames"):
                    float(value)
                continue
            float(value)
        assert dropped == [1]
        x = cp.arange(5.0)
        np.testing.assert_array_equal((x * 2).get(), np.arange(5.0) * 2)
        idx = cp.asarray(np.array([1, 2, 3]))
        np.testing.assert_allclose(float(data[idx].sum()), to_host(data)[[1, 2, 3]].sum(),
                                   rtol=1e-6)   # (CuPy's sum adds in its own order)
    finally:
        session.link.send = real_send
        session.close()


# ------------------------------------------------------------ the steady lane
@pytest.fixture(scope="module")
def lane_pool():
    """A pool of its own (as tests/gpu_backend/test_steady_lane.py's): no other test's
    sessions beside these loops, which would keep them out of the lane."""
    with pool_running_ahead("share", read_now=True) as p:
        yield p


def _lane_answers(session) -> int:
    return session.memory_info()["stretches"]["lane"]


def _lane_figures(session) -> dict:
    """The worker's lane figures and the client's, for an assertion's message."""
    worker = session.memory_info()["stretches"]
    return {**{k: worker.get(k) for k in ("lane", "lane_armed", "lane_left", "lane_left_why",
                                          "lane_declined", "replays", "graphed")},
            "client": _figures(session)}


def _minibatch_loop(steps: int, change_at: int | None = None, keep: bool = False):
    """``replay_sync.py``'s ``minibatch_step`` as a loop (its weights written in place each
    step, its indices uploaded): at *change_at* a shorter minibatch; *keep*: every step's
    indices kept to the end."""
    def loop(xp, session=None):
        rng = np.random.default_rng(31)
        x = xp.asarray(rng.normal(0, 1, (256, 8)).astype(np.float32))
        y = xp.asarray(rng.normal(0, 1, 256).astype(np.float32))
        w = xp.zeros(8, dtype=xp.float32)
        picks = np.random.default_rng(32)
        losses, kept = [], []
        for step in range(steps):
            size = 15 if step == change_at else 16
            idx = xp.asarray(picks.integers(0, 256, size))
            xb, yb = x[idx], y[idx]
            err = xb @ w - yb
            losses.append(float((err * err).mean()))
            w[...] -= 0.05 * (xb.T @ err) / size
            if keep:
                kept.append(idx)
        return losses + [w] + kept
    return loop


@pytest.mark.parametrize("change_at,keep", [(None, False), (40, False), (None, True)])
def test_a_step_that_uploads_is_served_in_the_steady_lane_when_its_message_comes(lane_pool,
                                                                                 change_at, keep):
    """A step whose stretch uploads (its data comes with its message) is served in the steady
    lane: run when its message comes, not ahead, and never pushed; a step of another shape
    leaves the lane and the loop comes back to it; every step's indices kept; the bits of the
    same loop without replay and of the reference module."""
    loop = _minibatch_loop(100, change_at, keep)
    expected = to_host(loop(reference_module()))
    pool = lane_pool
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        with no_collection():
            got = to_host(loop(module_for(s)))
        figures = s.memory_info()["stretches"]
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        with no_collection():
            plain = to_host(loop(module_for(s)))
    assert_bitwise(expected, got)
    assert_bitwise(plain, got)
    assert figures["lane"] >= 50, figures
    # (run when its message came: none answered from a replay run ahead, none pushed)
    assert figures["ahead"] == 0 and figures["ahead_alone"] == 0 and figures["pushed"] == 0, figures


def test_a_loop_the_lane_cannot_serve_is_not_armed_at_every_other_message(lane_pool):
    """A step that uploads and whose float parameter no guess follows (a learning rate drawn
    on the host each step): each plan armed is left at its first message, and the lane waits
    COOL messages before arming again (a review found one armed every two or three)."""
    from gpu_backend.worker.lane_arming import COOL

    steps = 150

    def loop(xp):
        rng = np.random.default_rng(43)
        x = xp.asarray(rng.normal(0, 1, (64, 4)).astype(np.float32))
        w = xp.zeros(4, dtype=xp.float32)
        out = []
        for _step in range(steps):
            idx = xp.asarray(rng.integers(0, 64, 8))
            err = x[idx] @ w - 1.0
            out.append(float((err * err).mean()))
            w -= float(rng.random()) * 0.01 * (x[idx].T @ err)
        return out + [w]

    with Session(lane_pool.address, lane_pool.token,
                 settings=SessionSettings(replay_measured=False)) as s:
        with no_collection():
            got = to_host(loop(module_for(s)))
        figures = s.memory_info()["stretches"]
    assert_bitwise(to_host(loop(reference_module())), got)
    assert figures["lane_armed"] <= steps // COOL + 2, figures


def test_a_lane_step_whose_data_frame_is_dropped_is_refused_and_the_loop_goes_on(lane_pool):
    """In the lane, a message that lacks its upload's frame is not the plan's: the lane is
    left and the generic path refuses it (a ProtocolError for that step); the session serves
    on, and the lane serves the loop again."""
    # (the tests before it closed their sessions; under load their workers may leave the
    # arbiter late, and beside another session every replay is measured, which the lane
    # declines: the likeliest reading of its failures in two loaded full suites, the second
    # with each of its three plans left 'not run' at its first message; not reproduced)
    assert until(lambda: not lane_pool.door.sessions, 30)
    session = Session(lane_pool.address, lane_pool.token,
                      settings=SessionSettings(replay_measured=False))
    cp = module_for(session)
    real_send = session.link.send
    state = {"drop": False, "dropped": 0}

    def send(frames, track=False):
        if state["drop"] and len(frames) == 2:
            state["drop"], state["dropped"] = False, state["dropped"] + 1
            frames = frames[:1]
        return real_send(frames, track=track)

    try:
        session.link.send = send
        rng = np.random.default_rng(33)
        data = cp.asarray(rng.random((64, 4), dtype=np.float32))
        host = to_host(data)
        before = None
        for step in range(120):
            if step == 60:   # (asked between two steps: a run under way would fall back)
                before = _lane_answers(session)
                assert before >= 20, str(_lane_figures(session))   # (whole: not cut)
            picked = rng.integers(0, 64, 8)
            idx = cp.asarray(picked)
            value = (data[idx] * 2.0).sum()
            if step == 60:
                state["drop"] = True
                with pytest.raises(ProtocolError, match="data frames"):
                    float(value)
                continue
            np.testing.assert_allclose(float(value), (host[picked] * 2.0).sum(), rtol=1e-5)
        assert state["dropped"] == 1, state
        assert _lane_answers(session) >= before + 20, str((before, _lane_figures(session)))
    finally:
        session.link.send = real_send
        session.close()


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="CuPy's log of a negative number warns of "
                    "nothing: no run now gives up (H200 run 262)")
def test_a_run_now_that_gives_up_counts_its_upload_once():
    """A step the lane runs when its message comes, then gives up (a warning of its ops: the
    generic path serves it and warns there): its upload's bytes are the user's once, not
    once by the lane and again by the generic path (a review's find). In a pool of its own,
    its usage read once the session's last report is in."""
    import warnings

    steps = 150
    rng = np.random.default_rng(41)
    host = rng.normal(5, 1, (64, 4)).astype(np.float32)
    host[5] = -1.0   # (the log of a row that holds it warns)
    expected = host.nbytes + steps * 4 * 8
    with pool_running_ahead("share", read_now=True) as pool:
        with Session(pool.address, pool.token,
                     settings=SessionSettings(replay_measured=False)) as s:
            cp = module_for(s)
            x = cp.asarray(host)
            picks = np.random.default_rng(42)
            warned = 0
            for _step in range(steps):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    idx = cp.asarray(picks.integers(0, 64, 4))
                    float(cp.log(x[idx]).sum())
                warned += any(issubclass(w.category, RuntimeWarning) for w in caught)
            figures = s.memory_info()["stretches"]
        assert warned >= 3 and figures["lane"] >= 20, (warned, figures)
        assert figures["lane_left_why"].get("not run", 0) >= 1, figures

        def bytes_in() -> int:
            return sum(row.get("bytes_in", 0) for row in pool.door.usage.totals().values())

        assert until(lambda: bytes_in() >= expected, 30.0, 0.05), bytes_in()
        seen = bytes_in()   # (the last report in: nothing more comes within a second)
        until(lambda: bytes_in() != seen, 1.0, 0.05)
        assert bytes_in() == expected
