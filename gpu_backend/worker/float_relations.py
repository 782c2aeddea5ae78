"""One message's float parameters guessed together: a float the loop makes from another
(issue 50).

worker/float_steps.py guesses each float from its own last values. Some floats a loop makes
from another float of the same message, and their rounding follows no model of their own:

- ISTA's soft threshold, ``clip(v, -lr * lam, lr * lam)`` beside ``lam = max(lam * 0.98,
  0.01)``, which the message reads after the step: each bound is the last message's ``lam``
  times a factor (a *product*, the message before's value: lag 1);
- an annealed noise scale, ``rs.normal(0.0, sqrt(2.0 * eta_t), n)`` beside ``eta_t * grad``:
  the scale is the *root* of the same message's ``eta_t`` times a factor (lag 0).

So a float whose own models are not sure (:func:`float_steps.sure_guess`) and did not get
every step of its window right, and that was, at each of its last RELATED values, another
float's times one factor (``t * c``) or the root of it (``sqrt(t * c)``) — the other's value
in the same message (its guess then, where that one's own model is sure or got its window)
or in the message before (its last value) — is guessed from that value so. Guessed each
alone, ISTA's message of three floats missed at 113 of 198 steps, together at 10 (the
decay's warm-up and its floor); ``langevin_annealed``'s two at nearly every step.

Cost: a relation found is kept, keyed by the float's run of values, and taken first at the
next message where its newest pair still holds (ISTA's three floats cost ~93 µs a message on
an H200 host, run 236, when each float's own models were scored first; 32.5 so, run 237). A
relation must hold at RELATED - 1 pairs at least (fewer let two decays at one rate pair by
chance); it is searched for messages of RELATED_MOST floats at most, and not again for
SEARCH_AGAIN guesses after none was found. A relation to the same message's value that went
on is taken before the float's own models are scored (``_goes_on_now``: Langevin's two floats
33.5 against 26 µs a message on the VM, forty-second session), where before a float whose own
model got its window kept that model's guess. A guess only decides what runs ahead: a wrong
one costs a run dropped, never a wrong reply.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from .float_steps import KEPT, WINDOW, next_float, scored_guess, sure_guess

__all__ = ["next_floats", "RELATED", "RELATED_MOST", "SEARCH_AGAIN"]

#: the last values of two floats one must be the other's product (or root) at: RELATED - 1
#: pairs at least (fewer let two decays at one rate pair by chance: a review's 1 000 loops of
#: two missed 3 085 messages together against 2 000 alone with four pairs)
RELATED = WINDOW + 1
#: the most floats of one message whose relations are searched (the search is quadratic in
#: them: ten random floats cost ~2 ms a guess); more are each guessed alone
RELATED_MOST = 6
#: a float whose search found no relation is not searched again for this many guesses while
#: its values go on (an unrelated float's search cost each guess otherwise: an Adam-like
#: loop's three floats 125 against 79 µs a guess alone)
SEARCH_AGAIN = 16
#: each table below cleared when it holds this many
_KEPT_MOST = 512


def _product(theirs: float, c: float) -> float:
    return theirs * c


def _root(theirs: float, c: float) -> float:
    product = theirs * c
    return math.sqrt(product) if product >= 0 else math.nan


#: the kinds of relation, by their number in the tables: a float is the other's value times
#: ``c``, or the root of that
_KINDS: tuple[Callable[[float, float], float], ...] = (_product, _root)

#: the relation a float's run of values had to another's, by the float's run less its oldest
#: value: (the other's run less its oldest, the kind, the factor)
_FOUND: dict[tuple, tuple[tuple, int, float]] = {}
#: the guesses left before a float whose search found no relation is searched again, by its
#: run less its oldest value
_UNRELATED: dict[tuple, int] = {}


def next_floats(histories: Sequence[Sequence[float]]) -> list[float]:
    """The next values of one message's floats (*histories*: each one's values, oldest first,
    at least two): each as :func:`float_steps.next_float` guesses it, or from another float
    of the message where it is that float's product or root (the module's doc)."""
    if len(histories) == 1:   # (most loops: one float that steps)
        return [next_float(histories[0])]
    runs = [tuple(values[-KEPT:]) for values in histories]
    count = len(runs)
    out: list = [None] * count
    for i in range(count):   # (a relation to the message before's value that goes on)
        mine = runs[i][-RELATED + 1:]
        found = _FOUND.get(mine[:-1])
        if found is None:
            continue
        for j in range(count):
            run = runs[j][-RELATED - 1:-1]
            if j != i and run[:-1] == found[0]:
                guess = _goes_on(mine, run, runs[j][-1])
                if guess is not None:
                    out[i] = guess
                break
    sure = [sure_guess(values) if guess is None else None for values, guess in zip(runs, out)]
    for i in range(count):   # (a relation to the same message's value that goes on: from
        if out[i] is None and sure[i] is None:   # that value, its own models not scored)
            out[i] = _goes_on_now(i, runs, out, sure)
    own: dict = {}
    for i in range(count):
        if out[i] is None and sure[i] is None:
            own[i] = scored_guess(runs[i])
    # each float's value in this message, where it is known: a relation that went on, a sure
    # guess, or one whose model got its whole window
    known = [out[i] if out[i] is not None else sure[i] if sure[i] is not None
             else own[i][0] if own[i][1] else None for i in range(count)]
    for i in range(count):
        if out[i] is not None:
            continue
        if sure[i] is not None:
            out[i] = sure[i]
            continue
        guess, fits = own[i]
        mine = runs[i][-RELATED:]
        if fits or count > RELATED_MOST or len(mine) < RELATED or _searched_lately(mine):
            out[i] = guess
            continue
        out[i] = _searched(i, runs, known)
        if out[i] is None:
            _UNRELATED[mine[1:]] = SEARCH_AGAIN
            out[i] = guess
    return out


def _goes_on_now(i: int, runs: list, out: list, sure: list) -> float | None:
    """Float *i*'s guess from the relation to another float's value in the same message that
    the guess before found (an annealed noise scale, ``sqrt(2.0 * eta_t)``), where it holds
    at the newest pair too and that value is known (a relation that went on, or a sure
    guess); None where there is none such. (Before, such a float's own models were scored
    first at every message, ~10 µs on the VM, before the relation was taken.)"""
    mine = runs[i][-RELATED:]
    if _FOUND.get(mine[:-1]) is None:
        return None
    for j in range(len(runs)):
        value = out[j] if out[j] is not None else sure[j]
        if j != i and value is not None:
            guess = _goes_on(mine, runs[j][-RELATED:], value)
            if guess is not None:
                return guess
    return None


def _searched(i: int, runs: list, known: list) -> float | None:
    """Float *i*'s guess from a relation to another float found now: the same message's value
    where it is known, else the message before's; None where there is none."""
    mine = runs[i][-RELATED:]
    for j, value in enumerate(known):
        if j == i:
            continue
        run = runs[j][-RELATED - 1:]
        if value is not None:   # (the same message's)
            guess = _relation(mine, run[1:], value)
            if guess is not None:
                return guess
        guess = _relation(mine[1:], run[:-1], run[-1])   # (the message before's)
        if guess is not None:
            return guess
    return None


def _goes_on(mine: tuple, theirs: tuple, value: float) -> float | None:
    """The guess from *value* by the relation the runs less their newest pair had where a
    guess before found it, if it holds at the newest pair too (kept for the next guess);
    else None, nothing searched."""
    found = _FOUND.get(mine[:-1])
    if found is None or found[0] != theirs[:-1]:
        return None
    _, kind, c = found
    relate = _KINDS[kind]
    if relate(theirs[-1], c) != mine[-1]:
        return None
    _keep(mine, theirs, kind, c)
    guess = relate(value, c)
    return guess if math.isfinite(guess) else None


def _relation(mine: tuple, theirs: tuple, value: float) -> float | None:
    """The guess from *value* by a relation *mine* had to *theirs* at each pair (paired from
    the newest): one that went on (:func:`_goes_on`), else one searched now (:func:`_find`)
    and kept."""
    guess = _goes_on(mine, theirs, value)
    if guess is not None:
        return guess
    found = _find(mine, theirs)
    if found is None:
        return None
    kind, c = found
    _keep(mine, theirs, kind, c)
    guess = _KINDS[kind](value, c)
    return guess if math.isfinite(guess) else None


def _keep(mine: tuple, theirs: tuple, kind: int, c: float) -> None:
    """The relation kept for the guess after, which looks up these runs less their oldest
    pair (by the float's own values: one relation a float, its other run beside)."""
    if len(_FOUND) >= _KEPT_MOST:
        _FOUND.clear()
    _FOUND[mine[1:]] = (theirs[1:], kind, c)


def _searched_lately(mine: tuple) -> bool:
    """Whether *mine*'s run less its newest value was searched for a relation and none was
    found within the last SEARCH_AGAIN guesses (the count then goes on with these values)."""
    left = _UNRELATED.pop(mine[:-1], 0)
    if left <= 1:
        return False
    if len(_UNRELATED) >= _KEPT_MOST:
        _UNRELATED.clear()
    _UNRELATED[mine[1:]] = left - 1
    return True


def _find(mine: tuple, theirs: tuple) -> tuple[int, float] | None:
    """(the kind, ``c``) of a relation each of the last values ``m`` of *mine* has to ``t`` of
    *theirs* (RELATED - 1 pairs at least, paired from the newest): ``t * c == m``, ``c`` the
    quotient of the newest pair or a neighbour within two units in the last place; else
    ``sqrt(t * c) == m``, ``c`` the shortest decimal near ``m * m / t`` or that quotient or a
    neighbour; None where there is none."""
    n = min(len(mine), len(theirs))
    if n < RELATED - 1:
        return None
    mine, theirs = mine[-n:], theirs[-n:]
    last, m = theirs[-1], mine[-1]
    if last == 0 or not math.isfinite(last) or not math.isfinite(m) or m == 0:
        return None
    pairs = list(zip(mine, theirs))
    for c in _near(m / last):
        if all(t * c == v for v, t in pairs):
            return 0, c
    if m > 0:
        q = m * m / last
        if q > 0 and math.isfinite(q):
            for c in (float(f"{q:.6g}"), *_near(q)):
                if all(_root(t, c) == v for v, t in pairs):
                    return 1, c
    return None


def _near(q: float) -> tuple:
    """*q* and its neighbours within two units in the last place."""
    if not math.isfinite(q) or q == 0:
        return ()
    up, down = math.nextafter(q, math.inf), math.nextafter(q, -math.inf)
    return q, up, down, math.nextafter(up, math.inf), math.nextafter(down, -math.inf)
