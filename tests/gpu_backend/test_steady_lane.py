"""The steady lane (worker/steady_lane.py): a loop's replays that go on by fixed steps served
in a few calls a message, and left for the generic path at anything else.

What the lane may answer is read from two real messages side by side (``Layout``): only
unsigned integers of the batch, the entry's first op, its inputs, results and frees may
step, and only while each stays within what its encoding holds. Through a real pool on the
NumPy device (its workers run every replay ahead, whatever its device time): loops whose
replays the lane answers give the very bits the same loop gives on a session without
replay and with the lane off — a hot sync, a loop-carried array (early replay on and off),
results the user keeps, an input replaced, a scalar changed, other messages between, a read
that fails now and then — and a pool with ``GPUWB_STEADY_LANE=0`` answers none in the lane."""

from __future__ import annotations

import math
import struct
import time

import msgpack
import numpy as np
import pytest

from gpu_backend.protocol import codec
from gpu_backend.worker.lane_messages import Layout, layout
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 100
#: the user's own Python between iterations: the worker runs the next replay ahead meanwhile
#: (a sleep, so that the client's pause leaves the worker a core on a loaded machine)
PAUSE = 0.002


def _pause() -> None:
    time.sleep(PAUSE)


def _bits(values: list) -> list:
    """Values read (floats, or an error's name), as what compares: a float's bits (CuPy
    inverts a singular matrix without error, into NaN, which equals nothing)."""
    return [v if isinstance(v, str) else struct.pack("<d", v) for v in values]


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", read_now=True) as p:
        yield p


@pytest.fixture(scope="module")
def pool_lane_alone():
    """The lane with no message committed ahead of its coming (worker/pushed_replies.py:
    whose held-back frees keep one more array in the turns a kept result takes)."""
    with pool_running_ahead("share", read_now=True, GPUWB_PUSH_AHEAD="0") as p:
        yield p


@pytest.fixture(scope="module")
def pool_without_lane():
    with pool_running_ahead("share", read_now=True, GPUWB_STEADY_LANE="0") as p:
        yield p


# ------------------------------------------------------------------ reading two messages
def _batch(b: int, first: int, outs: list, frees: list, params: list | None = None,
           inputs: list | None = None, after: tuple = ()) -> bytes:
    header = {"k": b"k" * 32, "b": b, "n": 3, "r": None,
              "T": [1, first, inputs or [0, 1], params or [1], outs, []], "F": frees}
    return codec.packb(header) + b"".join(codec.packb(h) for h in after)


def test_two_messages_that_step_say_the_next_ones_while_every_number_keeps_its_width():
    a = _batch(400, 1196, [1196, 1197], [1194], after=(1190,))
    b = _batch(401, 1199, [1199, 1200], [1197], after=(1193,))
    shape = Layout(a, b)
    assert dict(shape.stepping) == {("b",): 1, ("T", 1): 3, ("T", 4, 0): 3, ("T", 4, 1): 3,
                                    ("F", 0): 3, ("R", 0): 3}
    # the next message is the last plus the difference, read as integers: what the client
    # would send, byte for byte
    k = 5
    nxt = (int.from_bytes(b, "big") + k * shape.difference).to_bytes(len(b), "big")
    assert nxt == _batch(401 + k, 1199 + 3 * k, [1199 + 3 * k, 1200 + 3 * k], [1197 + 3 * k],
                         after=(1193 + 3 * k,))
    # ... as long as every number keeps its encoding (a uint 16 up to 65 535)
    assert shape.steps == (65535 - 1200) // 3
    # a fixint (one byte that is its value) goes only up to 127: the batch first here
    small = Layout(_batch(100, 10, [10, 11], [8]), _batch(101, 13, [13, 14], [11]))
    assert small.steps == min(127 - 101, (127 - 14) // 3) == 26


def test_a_float_parameter_that_steps_is_written_into_the_next_messages():
    """A loop's ``step * 0.5``: the float's bytes do not step, so the next message is the
    integers' step with the float written in, going on as RunAhead's guess does."""
    a = _batch(400, 1196, [1196, 1197], [1194], params=[1.0])
    b = _batch(401, 1199, [1199, 1200], [1197], params=[1.5])
    shape = Layout(a, b)
    assert [(path, x, y) for path, _at, x, y in shape.floats] == [(("T", 3, 0), 1.0, 1.5)]
    at = shape.floats[0][1]
    nxt = bytearray((shape.base + shape.difference).to_bytes(len(b), "big"))
    nxt[at:at + 8] = struct.pack(">d", 2.0)
    assert bytes(nxt) == _batch(402, 1202, [1202, 1203], [1200], params=[2.0])
    # a NaN that stays is the same bytes: no float steps
    nan = float("nan")
    assert Layout(_batch(400, 1196, [1196, 1197], [1194], params=[nan]),
                  _batch(401, 1199, [1199, 1200], [1197], params=[nan])).floats == []


def test_an_int_parameter_that_steps_steps_in_the_next_messages():
    """A slice's bounds that move by the batch (``x_all[j:j + 64]``): the integers' step,
    in the message's bytes as in the parameters the lane's run ahead takes."""
    a = _batch(400, 1196, [1196, 1197], [1194], params=[300, 364])
    b = _batch(401, 1199, [1199, 1200], [1197], params=[364, 428])
    shape = Layout(a, b)
    assert (("T", 3, 0), 64) in shape.stepping and (("T", 3, 1), 64) in shape.stepping
    nxt = (shape.base + shape.difference).to_bytes(len(b), "big")
    assert nxt == _batch(402, 1202, [1202, 1203], [1200], params=[428, 492])


def test_the_history_a_plan_hands_back_steps_its_ints_back_too():
    """Where the lane is left, the generic run ahead's history of a loop whose float and
    int parameters both step has the ints' earlier values, not the current one again (a
    guess from that history would step neither)."""
    from gpu_backend.worker.lane_plans import LanePlan, history_lists
    plan = LanePlan()
    plan.params, plan.int_steps = [0.3, 30, 7], [(1, 10)]
    plan.float_history = {0: (0.1, 0.2, 0.3)}
    assert history_lists(plan) == [[0.1, 10, 7], [0.2, 20, 7]]


def test_what_the_lane_cannot_serve_is_refused_when_read():
    with pytest.raises(ValueError):   # a float after the header (a record, not a free)
        Layout(_batch(400, 1196, [1196, 1197], [1194]) + codec.packb(1.0),
               _batch(401, 1199, [1199, 1200], [1197]) + codec.packb(1.5))
    with pytest.raises(ValueError):   # a negative int parameter (not an unsigned number)
        Layout(_batch(400, 1196, [1196, 1197], [1194], params=[-7]),
               _batch(401, 1199, [1199, 1200], [1197], params=[-8]))
    with pytest.raises(ValueError):   # a number grew a byte: not the same shape
        Layout(_batch(400, 124, [124, 125], [122]), _batch(401, 127, [127, 128], [125]))
    with pytest.raises(ValueError):   # an op record after the header (not a free)
        Layout(_batch(400, 1196, [1196, 1197], [1194]) + codec.packb([1, 2, 3, 4, 5]),
               _batch(401, 1199, [1199, 1200], [1197]) + codec.packb([1, 2, 3, 4, 5]))
    # every integer of a message, header and frees after it, with where its value lies
    data = _batch(400, 1196, [1196, 1197], [1194], after=(1190,))
    found = {path: (width, top, value) for path, _at, width, top, value in layout(data)}
    assert found[("b",)] == (2, 65535, 400) and found[("n",)] == (1, 127, 3)
    assert found[("R", 0)] == (2, 65535, 1190)
    assert msgpack.unpackb(data[:data.index(codec.packb(1190))]) is not None


# ------------------------------------------------------------------ loops through a pool
def _hot_sync(cp):
    x = cp.arange(1000, dtype=cp.float32) / 3
    out = []
    for _ in range(STEPS):
        out.append(float((x + 1).sum()))
        _pause()
    return out, x.get()


def _carried(cp):
    x = cp.arange(1024, dtype=cp.float32) / 1024
    y = cp.full(1024, 0.25, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        x = (x * 1.01 + y) / (x + 1.5)
        out.append(float(x.sum()))
        _pause()
    return out, x.get()


def _stepping_scalar(cp):
    """``float((x + step * 0.5).sum())``: its parameter changes by the same step."""
    x = cp.arange(1000, dtype=cp.float32) / 3
    out = []
    for step in range(STEPS):
        out.append(float((x + step * 0.5).sum()))
        _pause()
    return out, x.get()


def _minibatches_in_order(cp):
    """``x_all[j:j + 16]`` with ``j`` stepping by the batch, its loss read: the slice's
    bounds are int parameters that step (a new epoch starts the lane again)."""
    x_all = cp.arange(4000, dtype=cp.float32).reshape(500, 8) / 1000
    w = cp.linspace(-1, 1, 8, dtype=cp.float32)
    out = []
    for step in range(STEPS):
        j = (step * 16) % 480
        out.append(float((x_all[j:j + 16] @ w).sum()))
        _pause()
    return out, w.get()


def _time_stepped(cp):
    """``t = i * dt`` with ``dt = 0.01`` (a loop's time, computed from its counter): its
    next value is not ``t + (t - t_before)`` at 133 of 300 steps, so the lane's guess of
    it comes from its last values (worker/float_steps.py)."""
    x = cp.arange(1000, dtype=cp.float64) / 3
    out = []
    for i in range(STEPS):
        t = i * 0.01
        out.append(float((x * t).sum()))
        _pause()
    return out, x.get()


def _decayed_threshold(cp):
    """ISTA's soft threshold as a notebook writes it: ``clip(v, -lr * lam, lr * lam)`` with
    ``lam = lam * 0.98`` after, read with the step's ``lam``: three floats that change every
    step, two of them the last message's third times a factor (worker/float_steps.py's
    ``next_floats``)."""
    rng = np.random.default_rng(52)
    x = cp.asarray(rng.standard_normal(500))
    y = cp.asarray(rng.standard_normal(500) * 0.05)
    lam, lr = 0.5, 0.3
    out = []
    for _ in range(STEPS):
        v = x * 0.99 + y
        x = v - cp.clip(v, -lr * lam, lr * lam)
        lam = lam * 0.98
        out.append(float(lam * cp.abs(x).sum()))
        _pause()
    return out, x.get()


def _annealed_scale(cp):
    """Langevin's step with its noise drawn once (no draws in the loop): a step size
    annealed as ``0.05 / (1.0 + 0.02 * step)`` (float_steps' harmonic model) and the noise's
    scale ``sqrt(2.0 * eta_t)``, the root of its double (float_relations' root relation)."""
    rng = np.random.default_rng(53)
    x = cp.asarray(rng.uniform(-1.1, 1.1, 500))
    noise = cp.asarray(rng.standard_normal(500) * 0.01)
    out = []
    for step in range(STEPS):
        eta_t = 0.05 / (1.0 + 0.02 * step)
        x = x - eta_t * (4.0 * x * (x * x - 1.0)) + math.sqrt(2.0 * eta_t) * noise
        out.append(float(((x * x - 1.0) ** 2).mean()))
        _pause()
    return out, x.get()


def _changing(cp):
    """Kept results, a replaced input, a changed scalar and other messages between."""
    x = cp.arange(1000, dtype=cp.float32) / 7
    out, kept = [], []
    c = 1.0
    for i in range(3 * STEPS):
        s = (x + c).sum()
        out.append(float(s))
        if i % 17 == 5:
            kept.append(s)              # a result the user keeps (read at the end)
        if i == STEPS:
            x = x * 0.5                 # the input replaced
        if i == 2 * STEPS:
            c = 2.5                     # the scalar changed
        if i % 23 == 11:
            out.append(float(x[3]))     # another message between
        _pause()
    return out, [k.get() for k in kept], x.get()


def _product_sync(cp):
    """``float((a @ v + 1).sum())``: a product (cuBLAS's, eager between graphs) before the
    read."""
    rng = np.random.default_rng(50)
    a = cp.asarray(rng.random((48, 48), dtype=np.float32))
    v = cp.asarray(rng.random(48, dtype=np.float32))
    out = []
    for _ in range(STEPS):
        out.append(float((a @ v + 1).sum()))
        _pause()
    return out, v.get()


def _regression_step(cp):
    """A logistic regression's step: two products, its weights written in place, its loss
    read."""
    rng = np.random.default_rng(51)
    x = cp.asarray(rng.random((128, 8), dtype=np.float32))
    y = cp.asarray((rng.random(128) > 0.5).astype(np.float32))
    w = cp.zeros(8, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        p = 1.0 / (1.0 + cp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y) / 128)
        out.append(float(((p - y) ** 2).mean()))
        _pause()
    return out, w.get()


def _power_iteration(cp):
    """Power iteration: the product ``w = a @ v`` is a result the user keeps (its name holds
    it until the next step; every seventeenth is kept for good, read at the end), made by
    an eager op and handed out as that op's new array. The element read, ``e = v[0]``, is
    CuPy's 0-d view of ``v``, made again on the ``v`` handed out (worker/kept_views.py):
    those kept are read after their ``v`` is written."""
    a = cp.asarray(np.random.default_rng(52).random((48, 48), dtype=np.float32))
    v = cp.ones(48, dtype=cp.float32)
    out, kept = [], []
    for i in range(STEPS):
        w = a @ v
        v = w / cp.sqrt((w * w).sum())
        e = v[0]
        out.append(float(e))
        if i % 17 == 3:
            kept.append((w, v, e))
        _pause()
    for _w, u, e in kept:
        u[0] = -1.0
        out.append(float(e))
    return out, [k.get() for k, _u, _e in kept], v.get()


def _random_walk(cp):
    """A random walk: a ``RandomState``'s draws (eager, drawn ahead and undone from the
    generator's journal where the lane's run ahead is dropped) added to a carried array, its
    spread read; another message now and then between, so that runs ahead are dropped."""
    rs = cp.random.RandomState(53)
    x = cp.zeros(500, dtype=cp.float64)
    out = []
    for i in range(STEPS):
        x = x + rs.standard_normal(500)
        out.append(float(x.std()))
        if i % 41 == 20:
            out.append(float(x[0]))   # (another message: the run ahead's draws undone)
        _pause()
    return out, x.get(), rs.standard_normal(4).get()


def _monte_carlo_pi(cp):
    """Monte Carlo π with the module's functions (the global RandomState's draws): the draw
    ``p`` a result the user holds until the next step, whose metadata the client's template
    knows from its literals (kernelproxy/template_predictions.py, STATIC_DRAWS), so that its
    replays ask the worker for none and the lane takes them."""
    cp.random.seed(55)
    out = []
    for _ in range(STEPS):
        p = cp.random.uniform(size=(2, 500))
        out.append(float(((p * p).sum(axis=0) < 1).mean() * 4))
        _pause()
    return out, cp.random.uniform(size=3).get()


@pytest.mark.parametrize("loop", [_hot_sync, _carried, _stepping_scalar, _time_stepped,
                                  _decayed_threshold, _annealed_scale, _changing,
                                  _product_sync, _regression_step, _power_iteration,
                                  _random_walk, _monte_carlo_pi, _minibatches_in_order])
@pytest.mark.parametrize("early", [False, True])
def test_a_loop_answered_in_the_lane_gives_the_bits_the_ops_give(pool, loop, early):
    got, want, figures = beside_no_replay(pool, loop, early_replay=early)
    assert_bitwise(got, want)
    assert figures["lane"] >= STEPS // 4, figures


def test_an_eager_op_that_fails_in_the_lanes_run_ahead_fails_as_ever(pool):
    """A matrix inverted every step is all zeros at every twentieth (a loop-carried count):
    the lane's run ahead of such a step fails in its eager inverse and leaves nothing; the
    client's replay fails as ever, and the loop goes on with every other value its own."""
    def inverting(cp):
        a = cp.asarray(np.eye(6) * 2.0 + np.arange(36.0).reshape(6, 6) / 100)
        y = cp.zeros(1)
        out = []
        for _ in range(STEPS):
            y = (y + 1.0) % 20.0
            try:
                out.append(float(cp.linalg.inv(a * (y > 0.5)).sum()))
            except Exception as exc:   # (singular: NumPy's LinAlgError; CuPy gives values)
                out.append(type(exc).__name__)
            _pause()
        return out, [float(y[0])]

    got, want, figures = beside_no_replay(pool, inverting, early_replay=False)
    assert _bits(got[0]) == _bits(want[0])
    assert_bitwise(got[1], want[1])
    assert figures["lane"] >= 1, figures


def test_the_lane_gives_what_the_generic_path_gives(pool, pool_without_lane):
    got, _want, figures = beside_no_replay(pool, _changing)
    plain, _again, off = beside_no_replay(pool_without_lane, _changing)
    assert_bitwise(got, plain)
    assert figures["lane"] >= STEPS // 4 and off["lane"] == 0, (figures, off)
    assert off["ahead"] >= STEPS // 4, off


def test_a_read_that_fails_in_the_lane_fails_as_ever_and_the_loop_goes_on(pool):
    """A loop-carried count goes round 1, 2, 3, 4, 0, and the value read is infinite when it
    is 4: ``int`` of it fails in the worker at every fifth step. The lane's reads of such a
    step, made at once, fail and leave nothing; the client's replay fails as ever, and the
    loop goes on, its other steps answered in the lane again (until the stretch is let go
    after its failures, as without the lane)."""
    def overflowing(cp):
        y = cp.zeros(1, dtype=cp.float64)
        big = cp.full(1, cp.inf)
        out = []
        for _ in range(STEPS):
            y = (y + 1.0) % 5.0
            try:
                out.append(int((big ** ((y > 3.0) * 1.0) + y).sum()))   # (1 + y, or inf)
            except OverflowError as exc:
                out.append(type(exc).__name__)
            _pause()
        return out, [float((y + 1).sum())]

    got, want, figures = beside_no_replay(pool, overflowing, early_replay=False)
    assert got[0] == want[0] == [2, 3, 4, "OverflowError", 1] * (STEPS // 5)
    assert_bitwise(got[1], want[1])
    # (the stretch is let go after a few dozen failed steps, as without the lane; how many
    # of its steps the lane answers before then depends on the machine's pace)
    assert figures["ahead"] >= 1 and figures["ahead_read_later"] >= 1, figures


@pytest.mark.parametrize("failing", ["inverse", "read"])
def test_a_run_ahead_that_drew_then_failed_in_the_lane_undoes_its_draws(pool, failing):
    """A step that draws a matrix's noise, then fails at every twentieth step. In its
    inverse (the matrix all zeros; on the NumPy device only: CuPy inverts it into NaN),
    the lane's run ahead draws, then fails in the inverse; its draws are undone (the
    generator made again from its journal: by the lane, and by the generic run ahead tried
    after it, which fails too). In its read (``int`` of an infinite sum, on either device),
    the draws stand for the client's replay, which fails as ever. Either way the client's
    replay, and every step after it, draws the very numbers it draws without replay."""
    def drawing_then_failing(cp):
        rs = cp.random.RandomState(54)
        a = cp.asarray(np.eye(6) * 2.0 + np.arange(36.0).reshape(6, 6) / 100)
        big = cp.full(1, cp.inf)
        y = cp.zeros(1)
        out = []
        for _ in range(STEPS):
            y = (y + 1.0) % 20.0
            noise = rs.standard_normal((6, 6)) * 0.01
            try:
                if failing == "inverse":
                    out.append(float(cp.linalg.inv((a + noise) * (y > 0.5)).sum()))
                else:   # (the sum, or infinity where y is 0)
                    out.append(int(((a + noise).sum() * big ** ((y < 0.5) * 1.0)).sum()))
            except Exception as exc:   # (singular: NumPy's LinAlgError; CuPy gives values)
                out.append(type(exc).__name__)
            _pause()
        return out, rs.standard_normal(3).get()

    got, want, figures = beside_no_replay(pool, drawing_then_failing, early_replay=False)
    assert _bits(got[0]) == _bits(want[0])
    if failing == "read":
        assert got[0].count("OverflowError") == STEPS // 20
    assert_bitwise(got[1], want[1])
    assert figures["lane"] >= 1, figures


@pytest.mark.parametrize("loop", [_carried, _power_iteration])
def test_a_loop_in_the_lane_holds_no_more_arrays_than_without_it(tmp_path, loop):
    """The lane's runs ahead keep their results under provisional ids as the generic
    path's do; after the loop the session holds the same arrays either way, and nothing
    else on the device. (Its plan once kept the arrays the generic run ahead it was armed
    from had handed out, and the loop-carried input it had then: the arrays a kept result
    takes turns in were never free, each replay made a new one, and the session held 512
    bytes more on a GPU, H200 runs 128-129.)

    Judged once the idle session is swapped out (an array made after the loop, which leaves
    none of its own, for it to swap), on each side: the swap-out drops whatever
    run ahead stands, every graph and the next replay's arrays set up ahead
    (worker/graph_copies.py ``prepare``), so what is left on the device is what nothing
    should hold, and what went out is the arrays the loop left. The device's memory read
    while the session stood was the host's pace's as much as the lane's: a run ahead or a
    next replay set up ahead may stand then or not (28 672 or 40 960 bytes for the same loop
    on the same pool without the lane, H200 run 149; the lane's side 40 960 against 30 720
    in every H200 session from ``57dba7b`` on, runs 198–210, but 29 696 against 30 720
    alone on the same host, run 211). Read after the swap-out, 8–12 KB stayed on the lane's
    side on an H200 (runs 213–214): arrays reference cycles held, which no collection had
    come for in the idle worker; a swap-out now collects them (worker/swap.py)."""
    from kernelproxy.modules import module_for
    from kernelproxy.session import Session
    from kernelproxy.settings import SessionSettings

    from .test_swap import _swapped_clean, _wait

    figures = []
    for name, variables in (("lane", {"GPUWB_PUSH_AHEAD": "0"}), ("no lane", {"GPUWB_STEADY_LANE": "0"})):
        with pool_running_ahead("share", read_now=True, swap_dir=tmp_path / name.replace(" ", "_"),
                                **variables) as p:
            with Session(p.address, p.token, settings=SessionSettings(replay_measured=False)) as s:
                cp = module_for(s)
                loop(cp)
                kept = cp.ones(8, dtype=cp.float32)   # (something to swap out: the loop
                arrays = s.memory_info()["arrays"]    # leaves no array of its own)
                # (a usage report may lag the swap: waited for until nothing is left)
                clean = _swapped_clean(s)
                try:
                    row = _wait(clean, f"the {name} side's session swapped out with nothing left "
                                       "on the device")
                except AssertionError as exc:
                    raise AssertionError(f"{exc}; its last row {clean.last}") from None
                figures.append((arrays, row["swapped"]))
                assert float(kept.sum()) == 8.0
    assert figures[0] == figures[1], figures


def _random_walk_runs(cp, session) -> list:
    """``programs.py``'s random walk, run four times over as a cell run again: a
    ``RandomState``'s draw added in place, scaled by ``0.1 + 1e-4 * step`` (a float whose
    guess misses at its warm-up: each run's first steps leave the lane, and the generic run
    ahead after each leaving misses too). Returns each run's values, and how many of each
    run's messages *session*'s lane answered."""
    out, answered = [], []
    for run in range(4):
        cp.random.seed(70 + run)
        x = cp.zeros(1000, dtype=cp.float32)
        before = _lane_answers(session)
        for step in range(STEPS):
            x += (cp.random.rand(1000).astype(cp.float32) - 0.5) * (0.1 + 1e-4 * step)
            out.append(float(x.mean()))
            _pause()
        answered.append(_lane_answers(session) - before)
    return out, answered


def _lane_answers(session) -> int:
    return session.memory_info()["stretches"].get("lane", 0)


def test_a_loop_run_again_is_answered_in_the_lane_after_its_guess_warms_up(pool):
    """Each run's warm-up misses (the float's guess, then the generic run ahead's after the
    lane is left) do not add up: the lane's answers start the generic run ahead's misses in
    a row afresh, so no run of the cell sits out SIT_OUT replays (or twice, four times as
    many, as before at its second, third and fourth run). The same bits as without replay."""
    from kernelproxy.modules import module_for
    from kernelproxy.session import Session
    from kernelproxy.settings import SessionSettings

    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, early_replay=False)) as s:
        got, answered = _random_walk_runs(module_for(s), s)
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        want, _none = _random_walk_runs(module_for(s), s)
    assert_bitwise(got, want)
    # (each run's first ~20 steps are the guess's warm-up, its last few the loop's end)
    assert min(answered[1:]) >= STEPS // 2, answered
