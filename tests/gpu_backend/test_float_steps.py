"""The next value of a loop's float parameter (worker/float_steps.py): exact, or nearly, for
the ways a loop makes one — summed (``t += 0.1``), a multiple of its counter (``i * dt``),
a fraction of it (``i / 100``), an offset and a multiple (``0.1 + 1e-4 * i``), stepped
exactly (``step * 0.5``), a decay (``lr *= 0.99``), harmonic (``eta / (1.0 + decay * s)``) —
from its last values, and never worse than ``last + (last - before)`` on a summed one."""

from __future__ import annotations

import math

import pytest

from gpu_backend.worker.float_steps import KEPT, next_float

STEPS = 300


def _summed(dt: float) -> list:
    values, t = [], 0.0
    for _ in range(STEPS):
        values.append(t)
        t += dt
    return values


SEQUENCES = {
    "i * 0.01": ([i * 0.01 for i in range(STEPS)], 10),
    "i * 0.1": ([i * 0.1 for i in range(STEPS)], 6),
    "i / 3": ([i / 3 for i in range(STEPS)], 5),
    "i / 100": ([i / 100 for i in range(STEPS)], 30),
    "-i * 0.01 from 1000": ([-i * 0.01 for i in range(1000, 1000 + STEPS)], 10),
    "0.1 + 1e-4 * i": ([0.1 + 1e-4 * i for i in range(STEPS)], 8),
    "2.5 - 0.003 * i": ([2.5 - 0.003 * i for i in range(STEPS)], 10),
    "1.0 + i * 0.1 from 1000": ([1.0 + i * 0.1 for i in range(1000, 1000 + STEPS)], 25),
    "3 + 1e-6 * i": ([3 + 1e-6 * i for i in range(STEPS)], 10),
    "0.25 + i / 7": ([0.25 + i / 7 for i in range(STEPS)], None),
    "step * 0.5": ([s * 0.5 for s in range(STEPS)], 0),
    "t += 0.1": (_summed(0.1), None),
    "t += 0.01": (_summed(0.01), None),
    "t += 0.003": (_summed(0.003), None),
}


def _decayed(start: float, factor: float) -> list:
    values, x = [], start
    for _ in range(STEPS):
        values.append(x)
        x *= factor
    return values


SEQUENCES.update({
    "0.05 / (1 + 0.02 * s)": ([0.05 / (1.0 + 0.02 * s) for s in range(STEPS)], 3),
    "0.3 / (1 + 1e-4 * s)": ([0.3 / (1.0 + 1e-4 * s) for s in range(STEPS)], 3),
    "1.0 / (1 + 0.05 * s)": ([1.0 / (1.0 + 0.05 * s) for s in range(STEPS)], 3),
    "lr *= 0.99": (_decayed(0.1, 0.99), 2),
    "T *= 0.995": (_decayed(10.0, 0.995), 2),
    "x *= 0.5": (_decayed(3.0, 0.5), 2),
    "lam *= 0.98": (_decayed(0.5, 0.98), 2),
    "g *= 1.01": (_decayed(1e-3, 1.01), 2),
})


def _misses(values: list, guess) -> int:
    return sum(guess(values[max(0, k - KEPT):k]) != values[k] for k in range(2, len(values)))


def _summed_guess(values: list) -> float:
    return values[-1] + (values[-1] - values[-2])


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_a_loops_float_is_guessed_from_its_last_values(name):
    values, most = SEQUENCES[name]
    misses = _misses(values, next_float)
    summed = _misses(values, _summed_guess)
    if most is None:   # (never worse than the summed guess)
        assert misses <= summed, (misses, summed)
    else:
        assert misses <= most < summed or misses == summed == 0, (misses, summed)


def test_a_guess_that_would_not_be_finite_is_the_last_value():
    big = 1.7e308
    assert next_float([big / 2, big]) == big
    assert next_float([1.0, float("inf")]) == float("inf")
    assert math.isnan(next_float([1.0, float("nan")]))   # (nan stays nan: the last)
    assert next_float([2.0, 2.0]) == 2.0
    assert math.copysign(1, next_float([0.0, -0.0])) == -1   # (no step: the last, -0.0)


def test_only_the_last_values_are_read():
    values = [i * 0.01 for i in range(50)]
    assert next_float(values) == next_float(values[-KEPT:])


# ---------------------------------------------------------------- the rule, scored whole
def _scored_whole(values: list) -> float:
    """The guess as the module's doc states the rule, every step of the window scored
    afresh (the reference the module's shortcuts — the summed model's check first, each
    window's scores kept for the next guess — must give bit for bit)."""
    from gpu_backend.worker import float_steps as fs

    values = values[-KEPT:]
    before, last = values[-2], values[-1]
    models = (fs._summed, fs._multiple, fs._fraction, fs._geometric)
    best = fs._summed

    def right_at_every(model, run):   # (each of the last *run* steps)
        return all(model(values[i - 2], values[i - 1]) == values[i]
                   for i in range(len(values) - run, len(values)))

    if len(values) > 2:
        long_run = len(values) >= fs.LONG + 2
        if right_at_every(fs._summed, fs.LONG if long_run else min(fs.WINDOW, len(values) - 2)):
            guess = fs._summed(before, last)
            return guess if math.isfinite(guess) else last
        if long_run:
            window = values[-(fs.WINDOW + 2):]
            harmonic = (fs._harmonic,) if fs._reciprocals_step(window) else ()
            for model in (*models[1:], fs._affine, *harmonic):
                if right_at_every(model, fs.LONG):
                    if model is fs._multiple and right_at_every(fs._affine, fs.LONG):
                        model = fs._affine   # (an offset found where the multiple missed)
                    guess = model(before, last)
                    if guess is not None and math.isfinite(guess):
                        return guess
        if right_at_every(fs._summed, min(fs.WINDOW, len(values) - 2)):
            guess = fs._summed(before, last)
            return guess if math.isfinite(guess) else last
        values = values[-(fs.WINDOW + 2):]
        steps = range(2, len(values))
        scores = [sum(m(values[i - 2], values[i - 1]) == values[i] for i in steps) for m in models]
        bar = scores[0] + fs.MARGIN
        for model, score in zip(models[1:], scores[1:]):
            if score >= bar:
                best, bar = model, score + 1
        if bar <= len(steps) and max(scores) < len(steps):
            searched = (fs._harmonic, fs._affine) if fs._reciprocals_step(values) else (fs._affine,)
            for model in searched:
                score = sum(model(values[i - 2], values[i - 1]) == values[i] for i in steps)
                if score >= bar:
                    best, bar = model, score + 1
                if score == len(steps) and best is model:
                    break
    guess = best(before, last)
    if guess is None:
        guess = fs._summed(before, last)
    return guess if math.isfinite(guess) else last


def _same_bits(a: float, b: float) -> bool:
    return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_each_guess_is_the_rules_scored_whole_bit_for_bit(name):
    values = SEQUENCES[name][0]
    for n in range(2, 120):
        assert _same_bits(next_float(values[:n]), _scored_whole(values[:n])), (name, n)


def test_two_floats_guessed_in_turn_and_odd_values_keep_to_the_rule():
    """Two loops' floats guessed in turn (each window's kept scores found by its own values),
    and values no model fits: zeros of both signs, a jump, an infinity, a NaN."""
    odd = [0.0, -0.0, 0.0, -0.0, 1.0, 2.0, 4.0, 8.0, math.inf, 3.0, math.nan, 5.0, 6.0, 7.0,
           1e308, 1.7e308, -1e308, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
    a = [i * 0.01 for i in range(60)]
    b = [0.1 + 1e-4 * i for i in range(60)]
    for n in range(2, 60):
        for values in (a[:n], b[:n], odd[:min(n, len(odd))]):
            if len(values) >= 2:
                assert _same_bits(next_float(values), _scored_whole(values)), (values[-3:], n)


def test_a_decay_that_is_summed_now_and_then_stays_decayed_and_a_summed_float_summed():
    """``lr *= 0.99``'s factor is the shortest decimal near the last quotient (the quotient
    itself is a unit in the last place off at most steps: its guess would be too); a summed
    float the decay fits now and then (``t += 0.01`` from 0) keeps the summed guess."""
    from gpu_backend.worker import float_steps as fs

    values = _decayed(0.1, 0.99)
    quotients = [values[k] / values[k - 1] for k in range(1, 60)]
    assert any(q != 0.99 for q in quotients)
    assert all(fs._geometric(values[k - 2], values[k - 1]) == values[k] for k in range(2, 60))
    summed = _summed(0.01)
    assert _misses(summed, next_float) <= _misses(summed, _summed_guess)
