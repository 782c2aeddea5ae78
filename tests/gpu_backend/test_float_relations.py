"""One message's floats guessed together (worker/float_relations.py): a float the loop makes
from another — a product of the message before's value (ISTA's threshold ``lr * lam``), the
root of the same message's times a factor (an annealed noise scale ``sqrt(2 * eta_t)``) — is
guessed from it; floats no relation joins are each guessed as ``next_float`` guesses them,
bit for bit; two decays at one rate are not paired by chance."""

from __future__ import annotations

import math

from gpu_backend.worker.float_relations import RELATED, next_floats
from gpu_backend.worker.float_steps import KEPT, next_float

from .test_float_steps import _decayed, _summed


def _ista(steps: int = 200) -> list:
    """ISTA's floats as ``programs.py``'s ``ista_continuation`` sends them, in a message's
    order: ``-lr * lam`` and ``lr * lam`` (the threshold, before the step), then ``lam`` (read
    after ``lam = max(lam * 0.98, 0.01)``)."""
    lr, lam = 0.30475034096852016, 0.5
    runs: list = [[], [], []]
    for _ in range(steps):
        runs[0].append(-lr * lam)
        runs[1].append(lr * lam)
        lam = max(lam * 0.98, 0.01)
        runs[2].append(lam)
    return runs


def _message_misses(runs: list, guess) -> int:
    return sum(guess([r[max(0, k - KEPT):k] for r in runs]) != [r[k] for r in runs]
               for k in range(2, len(runs[0])))


def test_a_float_made_from_another_is_guessed_as_its_product():
    """ISTA's threshold: no model of its own follows ``lr * lam`` (a product's rounding), so
    guessed alone a message of the three floats misses at a third of its steps; together
    each threshold is the last message's ``lam`` times the factor its runs had, and a
    message misses only while the decay's own run is short and where it meets its floor."""
    runs = _ista()
    alone = _message_misses(runs, lambda hs: [next_float(h) for h in hs])
    together = _message_misses(runs, next_floats)
    assert alone > 50, alone
    assert together <= 12, together
    # (the same message's value: a float times another's sure guess)
    lam = _decayed(0.5, 0.98)
    same = [[0.37 * v for v in lam], lam]
    assert _message_misses(same, next_floats) <= 16   # (from the decay's long run: 14 values)
    assert _message_misses(same, lambda hs: [next_float(h) for h in hs]) > 50


def test_floats_that_are_no_product_of_each_other_are_guessed_each_alone():
    """Two floats no factor relates (``i * 0.01``, ``t += 0.1``), one float, and a pair that
    is a product only at the last few steps (fewer than four pairs): each float's guess is
    next_float's, bit for bit."""
    a = [i * 0.01 for i in range(80)]
    b = _summed(0.1)[:80]
    for k in range(2, 80):
        assert next_floats([a[:k], b[:k]]) == [next_float(a[:k]), next_float(b[:k])], k
        assert next_floats([a[:k]]) == [next_float(a[:k])]
    c = [1.0, 5.0, 2.0, 3.0 * 0.25, 7.0 * 0.25]   # (the last two a quarter of d's)
    d = [2.0, 9.0, 1.0, 3.0, 7.0]
    for k in range(2, 6):
        assert next_floats([c[:k], d[:k]]) == [next_float(c[:k]), next_float(d[:k])], k
    assert RELATED > 4


def _langevin(steps: int = 200) -> list:
    """``langevin_annealed``'s floats in a message's order: ``eta_t = eta / (1.0 + decay *
    step)`` (its gradient step) and ``sqrt(2.0 * eta_t)`` (its noise's scale)."""
    runs: list = [[], []]
    for step in range(steps):
        eta_t = 0.05 / (1.0 + 0.02 * step)
        runs[0].append(eta_t)
        runs[1].append(math.sqrt(2.0 * eta_t))
    return runs


def test_a_float_that_is_the_root_of_anothers_multiple_is_guessed_from_it():
    """The annealed scale: ``eta_t`` is harmonic (float_steps' own model), and the scale the
    root of its double, which no model of its own follows: guessed alone a message misses at
    nearly every step, together only while the relation's run is short."""
    runs = _langevin()
    alone = _message_misses(runs, lambda hs: [next_float(h) for h in hs])
    together = _message_misses(runs, next_floats)
    assert alone > 150, alone
    assert together <= RELATED + 2, together


def test_two_decays_at_one_rate_are_not_paired_by_chance():
    """Two floats that decay at one rate (``a *= 0.98; b *= 0.98``) are, now and then, each
    other's times a factor at a few pairs by chance: each is guessed by its own decay, as
    alone, over many starting values."""
    for a0 in (9.439, 9.019, 0.731, 3.3, 1.0):
        for b0 in (6.525, 1.221, 0.25, 7.77):
            runs = [_decayed(a0, 0.98)[:40], _decayed(b0, 0.98)[:40]]
            assert _message_misses(runs, next_floats) == \
                _message_misses(runs, lambda hs: [next_float(h) for h in hs]), (a0, b0)
