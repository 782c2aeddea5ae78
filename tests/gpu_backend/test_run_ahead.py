"""A loop's next replay run by the worker before the client asks for it (worker/run_ahead.py).

Each test runs its loop on a session of a pool whose workers run ahead (policy ``none``:
nobody is paced against the session; ``GPUWB_RUN_AHEAD_US`` high, so that the NumPy
device's host-timed replays qualify) and on one with stretch replay off, and compares them
bitwise: a replay answered from the run ahead gives what the ops give. Whether a given
replay was answered ahead depends on timing (the worker runs nothing ahead where the next
message has come already), so the loops that must be answered ahead say so over many
iterations, each with a millisecond of the user's own Python (a pause) between a reply and
the next replay, as a notebook's loop has."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest

from gpu_backend.worker import run_ahead
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import assert_bitwise as _bitwise
from ..quiet_gc import no_collection
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
#: the user's own Python between a loop's iterations, in the loops that must be run ahead
PAUSE = 0.001


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _random_pair(cp, seed: int, n: int):
    """Two float32 arrays of *n* in [0, 1), the same on every side."""
    rng = np.random.default_rng(seed)
    return (cp.asarray(rng.random(n, dtype=np.float32)),
            cp.asarray(rng.random(n, dtype=np.float32)))


def _chain(cp, steps=STEPS):
    x, y = _random_pair(cp, 3, 256)
    out = []
    for _ in range(steps):
        a = x * 1.01 + y
        b = (a - 0.5) * y + x
        c = b * 0.75 - y
        x = c * c * 0.5 + x * 0.25
        out.append(float(x.sum()))
        time.sleep(PAUSE)   # (the user's own Python between iterations)
    return out + [x.get()]


def test_a_loops_next_replay_is_answered_from_the_one_run_ahead(pool):
    got, want, figures = beside_no_replay(pool, _chain, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0
    got, want, _ = beside_no_replay(pool, _chain)   # (replays sent early, at their first op)
    _bitwise(got, want)


def test_a_replay_with_another_parameter_or_input_runs_as_ever(pool):
    """Run ahead with the last parameters and the inputs the last replays took: a scalar
    that changes every iteration (a zero's sign too), or inputs that take turns, are never
    answered wrongly."""
    def scalars(cp):
        x = cp.arange(300, dtype=cp.float32) - 100
        out = []
        for step in range(STEPS):
            scale = (0.0, -0.0, 1.5, 1.5)[step % 4] if step % 8 < 4 else step * 0.37
            out.append(float(cp.copysign(1.0, x * scale).sum()))   # (+0 and -0 differ)
        return out

    def turns(cp):
        x = cp.arange(300, dtype=cp.float32)
        z = cp.arange(300, dtype=cp.float32)[::-1].copy()
        out = []
        for step in range(STEPS):
            src = x if step % 3 else z
            out.append(float((src * 0.5 - 2).sum()))
        return out

    for loop in (scalars, turns):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        assert figures["fallbacks"] == 0


def test_a_write_between_two_replays_drops_the_one_run_ahead(pool):
    """Between two replays the user writes into their input (a setitem, an in-place
    operator, an upload): the run ahead read the old values, and is dropped."""
    def loop(cp):
        x = cp.arange(200, dtype=cp.float64)
        out = []
        for step in range(STEPS):
            out.append(float((x * 2.0 + 1.0).sum()))
            if step % 4 == 1:
                x[step % 200] = -step
            elif step % 4 == 2:
                x += 0.5
            elif step % 4 == 3:
                x[:3] = cp.asarray(np.array([step, step, step], dtype=np.float64))
        return out + [x.get()]

    got, want, _ = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    got, want, _ = beside_no_replay(pool, loop)
    _bitwise(got, want)


def test_results_kept_keep_their_values(pool):
    """A replay answered ahead hands out its kept results under the client's handles; the
    arrays they take turns in (GraphCopies._made_for) are never one the user still holds.
    (A view of a result inside the loop's body is never served by graphs, so never run
    ahead: tests/gpu_backend/test_stretch_replay.py keeps views.)"""
    def loop(cp):
        x, y = _random_pair(cp, 5, 64)
        kept = []
        for _ in range(STEPS):
            x = x * 0.75 + y
            kept.append(x)       # (every one: the loop's stretch is the same each time)
            float(x.sum())
            time.sleep(PAUSE)
        return [a.get() for a in kept]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1

    def some(cp):   # (every third kept: two stretches take turns, none run ahead)
        x, _ = _random_pair(cp, 6, 64)
        kept = []
        for step in range(STEPS):
            x = x * 0.75 + 0.125
            if step % 3 == 0:
                kept.append(x)
            float(x.sum())
        return [a.get() for a in kept] + [x.get()]

    got, want, _ = beside_no_replay(pool, some, early_replay=False)
    _bitwise(got, want)


def test_a_warning_is_told_with_its_replay_not_ahead(pool):
    """An op that warns (the NumPy device: a log of zero) is not answered from a run ahead:
    the warning is told once per iteration, as without replay."""
    def loop(cp):
        x = cp.zeros(16, dtype=cp.float64)
        caught = []
        for _ in range(STEPS // 2):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                v = float(cp.log(x + 0.0).sum())
            caught.append((v, len(seen)))
        return caught

    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False,
                                                                    early_replay=False)) as s:
        got = loop(module_for(s))
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        want = loop(module_for(s))
    assert got == want


def test_a_run_ahead_never_asked_for_is_freed(pool):
    """A loop ends with a replay run ahead that no message asks for: the next batch drops
    it, and the session holds the arrays it held before the loop."""
    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, early_replay=False)) as s:
        cp = module_for(s)
        before = s.memory_info()["arrays"]
        with no_collection():
            _chain(cp)
        info = s.memory_info()
    assert info["arrays"] == before and info["stretches"]["ahead"] >= 1


def _stencil(cp, steps=STEPS):
    """A stencil's step as replay_sync.py's: a copy of the grid written in place (a slice's
    ``+=``), its largest change read."""
    u = cp.asarray(np.random.default_rng(7).random((24, 24), dtype=np.float32))
    out = []
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += 0.2 * lap
        out.append(float(cp.abs(lap).max()))
        time.sleep(PAUSE)
    return out + [u.get()]


def test_a_step_that_writes_only_arrays_it_made_is_run_ahead(pool):
    """In-place writes into a copy the step made (and through a view of it, ``.T``) change
    nothing the client holds: the stencil's next replay is run ahead, early replays are
    sent (and undone where the client's run differs), bitwise as without replay."""
    def transposed(cp):
        x, y = _random_pair(cp, 8, 64)
        x, y = x.reshape(8, 8), y.reshape(8, 8)
        out = []
        for _ in range(STEPS):
            w = x * 0.5 + y
            w.T[0] += 1.0
            w *= 0.75
            x = w
            out.append(float(w.sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    for loop in (_stencil, transposed):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
        got, want, _ = beside_no_replay(pool, loop)   # (replays sent early, at their first op)
        _bitwise(got, want)


def test_a_step_that_writes_its_input_is_run_ahead_and_an_unasked_run_changes_nothing(pool):
    """An in-place write into the step's input, directly, through a view, or by an item
    assignment (``w -= lr * grad``, a stencil's ``u[1:-1] = ...``): the next replay is run
    ahead, its writes kept in its graphs' buffers and copied into the input only when the
    client asks for it. The run ahead after the loop's last iteration (never asked for),
    and the runs dropped by a write between two replays, change nothing the client holds:
    every input ends as without replay, bitwise; early replays never go for such a step."""
    def direct(cp):
        x = cp.arange(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            x += 0.5
            out.append(float((x * 2).sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    def through_a_view(cp):
        x = cp.arange(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            x[1:] += x[:-1] * 0.01
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    def through_asarray(cp):   # (``cp.asarray(x)`` is x itself, as in CuPy)
        x = cp.arange(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            a = cp.asarray(x)
            a += 1.0
            out.append(float((a * 3).sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    def item_assignment_and_writes_between(cp):
        u = cp.asarray(np.random.default_rng(9).random((12, 12), dtype=np.float32))
        w = cp.zeros(12, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] - 2 * u[1:-1, 1:-1]
            u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * lap
            w -= 0.5 * u[1]
            out.append(float(cp.abs(lap).max()))
            if step % 9 == 4:
                u[0, 0] = step          # (a write between two replays drops the run ahead)
            time.sleep(PAUSE)
        return out + [u.get(), w.get()]

    for loop in (direct, through_a_view, through_asarray, item_assignment_and_writes_between):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, (loop.__name__, figures)
        got, want, _ = beside_no_replay(pool, loop)   # (early replay on: the client is told not to)
        _bitwise(got, want)


def test_a_step_that_writes_into_a_ufuncs_result_is_run_ahead_and_replayed_early(pool):
    """A write into what a ufunc made (``a = exp(x); a /= a.sum()``: a softmax) changes
    nothing the client holds before the replay's results: a ufunc's call makes a new
    array, as an operator's does (moving_views.fresh_result). Such a step was never run
    ahead nor replayed early till the forty-eighth session."""
    def softmax_step(cp):
        x = cp.linspace(-1, 1, 200)
        out = []
        for _ in range(STEPS):
            a = cp.exp(x * 0.5)
            a /= a.sum()
            b = cp.maximum(x, 0.0)
            b *= 0.5
            x = x * 0.9 + a + b * 0.01
            out.append(float(a.max()))
            time.sleep(PAUSE)
        return out + [x.get()]

    got, want, figures = beside_no_replay(pool, softmax_step, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    got, want, _ = beside_no_replay(pool, softmax_step)   # (replays sent early)
    _bitwise(got, want)


def test_buffers_that_take_turns_are_run_ahead(pool):
    """Ping-pong buffers (a step reads u and writes v, then ``u, v = v, u``): the next
    replay's inputs are the last one's, swapped; it is run ahead with them (GraphCopies.
    learn), its write kept in its graphs' buffers until asked, and the run after the last
    step, never asked for, changes neither buffer."""
    def ping_pong(cp):
        u = cp.linspace(0, 1, 300)
        v = cp.zeros(300)
        out = []
        for step in range(STEPS):
            v[1:-1] = u[1:-1] + 0.2 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
            v[0], v[-1] = 0.0, 1.0
            u, v = v, u
            out.append(float(u.max()))
            if step % 13 == 7:
                v[5] = 0.5   # (a write between two replays: the run ahead is dropped)
            time.sleep(PAUSE)
        kept = (u.get(), v.get())
        time.sleep(0.05)   # (the worker's run ahead after the last step has run)
        return out + [kept, u.get(), v.get()]

    got, want, figures = beside_no_replay(pool, ping_pong, early_replay=False)
    _bitwise(got, want)
    _bitwise(got[-3], [got[-2], got[-1]])
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures


def test_a_step_that_writes_an_alias_of_its_input_is_never_run_ahead(pool):
    """An in-place write through an array that an op made on the worker and that may be its
    input's memory (``+x``, which an array library may hand back as x itself; a method's
    view, ``x.reshape``, not followed to its input): the replay is never run ahead, and the
    input takes every write, as without replay. (``cp.asarray(x)`` is x itself on the
    client, as in CuPy: a write through it is the input's, run ahead as the test above's.)"""
    def through_pos(cp):
        x = cp.arange(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            a = +x
            a += 1.0
            out.append(float((a * 3).sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    def through_a_methods_view(cp):
        x = cp.arange(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            a = x.reshape(8, 8)
            a += 1.0
            out.append(float((x * 3).sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    for loop in (through_pos, through_a_methods_view):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        assert figures["ahead"] == 0, (loop.__name__, figures)


def _named_temporaries(elements: int):
    """A step whose named temporaries the user's variables keep until the next iteration
    (n-body's pattern): each replay's kept results are four arrays of *elements* float32
    beside the carried one."""
    def loop(cp):
        x = cp.asarray(np.random.default_rng(11).random(elements, dtype=np.float32))
        out = []
        for _ in range(STEPS // 2):
            a = x * 0.5
            b = a + 0.25
            c = b * b
            d = c - a
            x = d * 0.5 + 0.125
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        return out + [x.get()]
    return loop


def test_a_step_keeping_large_temporaries_is_run_ahead_within_its_sessions_share(pool):
    """A run ahead's kept results may hold an eighth of the session's memory limit (the
    pool's 256 MiB here: 32 MiB), more than the 16 MiB that held every n-body-sized step
    back: ~21 MB of them is run ahead; ~42 MB, over the share, never is. Bitwise as
    without replay either way."""
    assert run_ahead.max_bytes(1 << 28) == 32 << 20 and run_ahead.max_bytes(None) == 16 << 20
    within = _named_temporaries(1 << 20)    # 5 arrays of 4 MiB
    got, want, figures = beside_no_replay(pool, within, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    over = _named_temporaries(2 << 20)      # 5 arrays of 8 MiB
    got, want, figures = beside_no_replay(pool, over, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] == 0, figures


def test_a_scalar_that_steps_each_iteration_is_guessed_and_run_ahead(pool):
    """The hot sync as a loop writes it, ``float((x + step * 0.5).sum())``, and a step count:
    the next replay is run ahead with each scalar gone on by its last step (guess_params),
    and answered from it; bitwise as without replay."""
    def stepping(cp):
        x = cp.arange(300, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            out.append(float((x + step * 0.5).sum() * (step + 3)))
            time.sleep(PAUSE)
        return out

    got, want, figures = beside_no_replay(pool, stepping, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= STEPS // 2 and figures["fallbacks"] == 0, figures


def test_a_scalar_no_guess_follows_sits_out_its_runs_ahead(pool):
    """A scalar that changes in no way the guess follows (``step * step``): its runs ahead
    are dropped, MAX_MISSES in a row, and then the stretch sits out SIT_OUT replays, so at
    most a few are ever run for nothing; bitwise as without replay."""
    def squares(cp):
        x = cp.arange(300, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            out.append(float((x + step * step * 0.37).sum()))
            time.sleep(PAUSE)
        return out

    got, want, figures = beside_no_replay(pool, squares, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] == 0, figures
    # (its first MISSES_FROM replays' misses are its guess's warm-up, not counted to sit out)
    assert 1 <= figures["ahead_missed"] <= run_ahead.MISSES_FROM + 2 * run_ahead.MAX_MISSES, figures


def test_a_scalar_no_guess_ever_follows_sits_out_longer_each_time(pool):
    """A scale annealed along a cosine (``0.5 * (1 + cos(pi * step / 300))``), which no guess
    follows, over a long loop: each time its runs ahead miss MAX_MISSES in a row again, the
    stretch sits out twice as many replays (SIT_OUT, 2 * SIT_OUT, ...). Over 300 replays
    that is four rounds of misses (12 runs dropped on the development VM), where a fixed
    SIT_OUT had nine (27); bitwise as without replay. (Until 2026-11-29 this test annealed
    by ``1 / (1 + 0.05 * step)``, which float_steps' harmonic model now follows: the test
    below.)"""
    steps = 300

    def annealed(cp):
        x = cp.arange(300, dtype=cp.float32)
        out = []
        for step in range(steps):
            out.append(float((x * (0.5 * (1.0 + math.cos(math.pi * step / steps)))).sum()))
            time.sleep(PAUSE / 4)
        return out

    got, want, figures = beside_no_replay(pool, annealed, early_replay=False)
    _bitwise(got, want)
    rounds, replays, sit = 0, steps, run_ahead.SIT_OUT
    while replays > 0:   # (a round: MAX_MISSES runs that missed, then a sit-out)
        rounds, replays = rounds + 1, replays - run_ahead.MAX_MISSES - sit
        sit = min(2 * sit, run_ahead.MAX_SIT_OUT)
    # (a run ahead the guess got right by chance starts the doubling afresh: a round more)
    assert 1 <= figures["ahead_missed"] <= run_ahead.MISSES_FROM \
        + (rounds + figures["ahead"]) * run_ahead.MAX_MISSES, figures


def test_a_scale_annealed_as_inverse_time_is_guessed_and_run_ahead(pool):
    """``1 / (1 + 0.05 * step)`` (an inverse-time schedule, float_steps' harmonic model):
    after its model's warm-up the next replay is run ahead with the next scale and answered
    from it; bitwise as without replay."""
    def annealed(cp):
        x = cp.arange(300, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            out.append(float((x * (1.0 / (1.0 + 0.05 * step))).sum()))
            time.sleep(PAUSE)
        return out

    got, want, figures = beside_no_replay(pool, annealed, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= STEPS // 2 and figures["fallbacks"] == 0, figures


def test_the_guess_follows_ints_and_floats_that_step_and_keeps_the_rest():
    guess = run_ahead.guess_params
    assert guess(None, [1, 0.5, True]) == [1, 0.5, True]
    assert guess([[3, 1.0, 2.0, True, "a", 4]], [4, 1.5, 2.0, False, "b", 4.0]) == [5, 2.0, 2.0, False, "b", 4.0]
    assert guess([[1.0]], [float("inf")]) == [float("inf")]   # (not inf + inf - 1: stays)
    assert guess([[0.0, 1]], [-0.0, 2, 7]) == [-0.0, 2, 7]    # (lengths differ: the last)
    assert type(guess([[1]], [2])[0]) is int and type(guess([[1.0]], [2.0])[0]) is float
    # a float the loop computes from its counter (``t = i * 0.01``), guessed from its last
    # values (worker/float_steps.py): where ``last + (last - before)`` is one bit off
    history = [[7, i * 0.01] for i in range(3, 10)]
    assert 10 * 0.01 + (10 * 0.01 - 9 * 0.01) != 11 * 0.01
    assert guess(history, [8, 10 * 0.01]) == [9, 11 * 0.01]
    # a decay and the floats the loop makes from it (``lr * lam`` from the step before's
    # ``lam``), guessed together: each the last ``lam`` times its factor
    lams = [0.5]
    for _ in range(30):
        lams.append(lams[-1] * 0.98)
    history = [[0.3 * lams[k - 1], 1, lams[k]] for k in range(1, 30)]
    assert guess(history[:-1], history[-1]) == [0.3 * lams[29], 1, lams[30]]


def test_a_narrow_floats_guess_is_rounded_to_its_type_from_the_line_its_values_lie_on():
    """``np.float32(i * dt)``: the client sends each value rounded to float32, so the float
    models see the roundings as the step's own and missed every other step; rounded to
    the parameter's type (StretchRecords.param_types) from the straight line fitted to its
    last values, the guess is the client's next value almost every step. A float64 value
    and a type not given are guessed as before."""
    for dt in (0.05, 0.01, 0.037, 1e-3):
        values = [float(np.float32(i * dt)) for i in range(60)]
        hits = sum(run_ahead.guess_params([[v] for v in values[:k - 1]], [values[k - 1]],
                                          [np.float32])[0] == values[k] for k in range(3, 59))
        plain = sum(run_ahead.guess_params([[v] for v in values[:k - 1]], [values[k - 1]])[0]
                    == values[k] for k in range(3, 59))
        assert hits >= 44 and hits > plain + 15, (dt, hits, plain)
    values = [i * 0.05 for i in range(10)]
    assert run_ahead.guess_params([[v] for v in values[:8]], [values[8]], [np.float64]) == \
        run_ahead.guess_params([[v] for v in values[:8]], [values[8]])


def test_a_narrow_floats_decay_is_guessed_from_the_line_its_logarithms_lie_on():
    """``np.float32(0.1 * 0.97 ** i)``, ``lam *= 0.98`` sent as float32, a growth, a negative
    decay, a recurrence made in float32 itself: no model of worker/float_steps.py saw the
    client's roundings as a decay, and no guess was right (0 of 56 each); fitted to the
    logarithms of the last values, the guess rounded to float32 is the client's next value
    most steps (43-49 of 56 on the development VM)."""
    lam, iterated, in_float32 = 0.5, [], np.float32(0.5)
    runs = [[float(np.float32(0.1 * 0.97 ** i)) for i in range(60)],
            [float(np.float32(5 * 0.9 ** i)) for i in range(60)],
            [float(np.float32(1e-3 * 1.05 ** i)) for i in range(60)],
            [float(np.float32(-2 * 0.99 ** i)) for i in range(60)]]
    for _ in range(60):
        iterated.append(float(np.float32(lam)))
        lam *= 0.98
    runs.append(iterated)
    steps = []
    for _ in range(60):
        steps.append(float(in_float32))
        in_float32 = np.float32(in_float32 * np.float32(0.98))
    runs.append(steps)
    for values in runs:
        hits = sum(run_ahead.guess_params([[v] for v in values[:k - 1]], [values[k - 1]],
                                          [np.float32])[0] == values[k] for k in range(3, 59))
        plain = sum(run_ahead.guess_params([[v] for v in values[:k - 1]], [values[k - 1]])[0]
                    == values[k] for k in range(3, 59))
        assert hits >= 40 and plain == 0, (values[:3], hits, plain)
    # (values that lie on no curve of one sign, or a zero among them, keep the models' guess)
    values = [float(np.float32(v)) for v in (0.5, -0.25, 0.125, 0.0, 0.3, 0.7)]
    assert run_ahead.guess_params([[v] for v in values[:4]], [values[4]], [np.float32]) == \
        [float(np.float32(run_ahead.guess_params([[v] for v in values[:4]], [values[4]])[0]))]


def test_a_float32_decay_is_run_ahead_bitwise(pool):
    def loop(cp):
        x = cp.ones(64, dtype=cp.float32)
        out = []
        for i in range(STEPS):
            x = x * np.float32(0.1 * 0.97 ** i) + np.float32(0.5)
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1, figures


def test_a_history_written_where_it_is_has_a_missed_run_aheads_rows_put_back(pool):
    """``traj[j] = x`` where only that assignment, eager, writes ``traj``: its graphs write the
    client's array where it is (worker/moving_views.assigned_only), not through a buffer
    copied in and out at every replay. A run ahead writes it too, so a run ahead that is
    dropped — here the index jumps every fifth step, so the guess of the step before, a
    valid row, was wrong — has what it overwrote put back (StretchGraphs.undo): the
    history as without replay, bit for bit, and no copy of it a replay."""
    def loop(cp):
        x = cp.linspace(0, 1, 256, dtype=cp.float32)
        traj = cp.zeros((3 * STEPS, 256), dtype=cp.float32)
        out, j = [], 0
        for i in range(STEPS):
            x = x * np.float32(0.99) + np.float32(0.01)
            traj[j] = x
            out.append(float(x[3]))
            j += 3 if i % 5 == 4 else 1
            time.sleep(PAUSE)
        return out + [traj.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["graphed"] >= STEPS - 12, figures
    assert figures["copied"] <= 12, figures   # (the history copied in and out: one a replay)


def test_a_float32_scalar_that_steps_is_run_ahead_bitwise(pool):
    def loop(cp):
        x = cp.zeros(64, dtype=cp.float32)
        out = []
        for i in range(STEPS):
            x = x * np.float32(0.9) + np.float32(i * 0.05)
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1, figures


def test_a_parameter_that_is_the_value_read_at_the_replay_before_is_run_ahead(pool):
    """Power iteration (``n = float(norm(y)); x = y / n``): each replay's parameter is the
    value the worker read for the client at the replay before, which no model of the
    parameter's own values guesses; taken from that read (worker/fed_params.py), the next
    replay is run ahead and answered. Also where the read closes another stretch, the
    parameter's stretch coming after it (stretches taking turns). Bitwise as without
    replay; such loops were never answered ahead before the forty-eighth session."""
    def power_iteration(cp):
        a = cp.asarray(np.random.default_rng(3).random((32, 32)))
        x = cp.ones(32)
        out = []
        for _ in range(STEPS):
            y = a @ x
            norm = float(cp.sqrt((y * y).sum()))
            x = y / norm
            out.append(norm)
            time.sleep(PAUSE)
        return out + [x.get()]

    def read_then_used(cp):
        x = cp.linspace(0.5, 2.0, 100)
        out = []
        for _ in range(STEPS):
            peak = float(x.max())
            x = x / peak + 0.01 * x
            out.append((peak, float(x.sum())))
            time.sleep(PAUSE)
        return out + [x.get()]

    for loop in (power_iteration, read_then_used):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, (loop.__name__, figures)


def test_which_parameters_are_fed_by_the_replay_before():
    from gpu_backend.worker.fed_params import FedParams
    from gpu_backend.worker.stretches import ReplayEntry

    fed = FedParams()

    def answered(sid, first, params, values):
        entry = ReplayEntry(sid, first, [], params, [], None, False)
        fed.note(first, [(first + offset, v) for offset, v in values.items()])
        reads = fed.reads_of(entry)
        fed.learn(entry, reads)
        return reads

    reads = answered(1, 10, [0.5, 3], {4: 2.25})
    assert fed.guess(1, [0.5, 3], 1, reads) == [0.5, 3]          # (nothing learnt yet)
    reads = answered(1, 20, [2.25, 3], {4: 1.75})                 # (param 0 was read 4)
    assert fed.guess(1, [2.25, 3], 1, reads) == [2.25, 3]         # (once: not a rule yet)
    reads = answered(1, 30, [1.75, 3], {4: 1.5})                  # (twice in a row)
    assert fed.guess(1, [1.75, 3], 1, reads) == [1.5, 3]
    assert fed.guess(1, [1.75, 3], 2, reads) == [1.75, 3]         # (another stretch's reads)
    reads = answered(1, 40, [9.0, 3], {4: 1.25})                  # (broken: no rule)
    assert fed.guess(1, [9.0, 3], 1, reads) == [9.0, 3]
    # a read of another type, a bool, a value noted for another replay: never a source
    fed = FedParams()
    for first, value in ((10, 1.0), (20, 2.0), (30, 3.0)):
        reads = answered(1, first, [float(first) / 10 if first > 10 else 0.0], {2: 1})
        assert fed.guess(1, [0.0], 1, reads) == [0.0]
    fed.note(50, [(52, 7.5)])
    assert fed.reads_of(ReplayEntry(1, 60, [], [], [], None, False)) == {}
