"""The next value of a loop's float parameter, guessed exactly from its last few (issue 50).

A replay run ahead, and the steady lane's next message, take the loop's next parameters as
a guess; a float guessed one bit off is a run ahead dropped and the lane left. The guess was
``last + (last - before)``, exact for a float that steps exactly (``step * 0.5``) or is
summed (``t += 0.1``), but not for one a loop computes from its counter: ``t = i * dt``
with ``dt = 0.01`` rounds otherwise than ``t + dt`` at 133 of 300 steps, and
``programs.py``'s random walk's ``0.1 + 1e-4 * step`` at 147 (the lane left 127 times over
its 2 396 replays on an H200, run 151).

So each float is guessed by one of five models of how a loop makes it, the one that
predicted the most of its last :data:`WINDOW` values exactly, the summed one unless another
beat it by :data:`MARGIN`:

- *summed*: ``last + (last - before)``;
- *a multiple of the counter*: ``b * s`` for an integer ``s`` that goes on by one
  (``i * dt``), ``b`` and ``s`` found from the last two values (``s = last / (last -
  before)``, ``b`` the double, or a neighbour, with ``b * s == last`` and ``b * (s - 1) ==
  before``);
- *a fraction of the counter*: ``s / m`` (``i / 100``), ``m = 1 / (last - before)``;
- *a decay*: ``last * r`` (``lr *= 0.99``, an annealed temperature), ``r`` the shortest
  decimal near ``last / before`` (the quotient itself is often a unit in the last place
  off), or the quotient, with ``before * r == last``;
- *an offset and a multiple of the counter*: ``a + b * s`` (``0.1 + 1e-4 * step``), ``b``
  the shortest decimal (six digits at most) within a few units in the last place of
  ``last - before``, ``a`` zero or ``last`` rounded to a few decimals, ``s`` then found,
  with ``a + b * s == last`` and ``a + b * (s - 1) == before``. Searched only where none of
  the other three got every step of the window right and it could still win; the pairs
  found are tried first after, and each (before, last) searched once. (So its guess may
  depend on the pairs other floats found before: a miss that depends on history, never a
  wrong reply — a guess only decides what runs ahead.)

Each step's hits are remembered (:func:`_hits`), and each window's scores (:func:`_window`):
a guess scores its one new step on the window the guess before it left. Where the summed
model got every step of the window right, none of the others can beat it by MARGIN and its
guess is taken at once (a loop's ``t += dt`` or ``step * 0.5``, the common case: 0.55 against
4.1 µs a guess on the development VM; the lane guesses at every message). Both shortcuts give
the rule's guess bit for bit (tests/gpu_backend/test_float_steps.py scores every window
whole beside them).

Over 298 steps of each (the guess from the values before it, KEPT at most): ``i * 0.01``
13 misses (133 summed; 22 before the long run of :func:`next_float`), ``i * 0.1`` 6 (190),
``i / 3`` 2 (201), ``i / 100`` 15 (133; 24), ``0.1 + 1e-4 * i`` 10 (147), ``2.5 - 0.003 *
i`` 2 (153), ``1.0 + i * 0.1`` from ``i = 1000`` 18 (231), ``t += 0.1`` 3 (3), ``t += 0.01``
6 (6), ``step * 0.5`` 0 (0); ``-i * 0.01`` from ``i = 1000`` 38 (72 before: where the summed
guess gets the window's six steps, it stays), and ``0.25 + i / 7`` (a step no short decimal
is) as often as summed (162); ``lr *= 0.99``, ``x *= 0.5``, ``lam *= 0.98`` 2 each (the first
two guesses; 116–296 before the decay was a model).

*One message's floats together* (:func:`next_floats`): a float no model of its own is sure
of (the summed one right at the window's every step, another at the long run's) that was,
at each of its last RELATED values, another float's times one factor — in the same message
or the one before — is guessed as that float's value times the factor. ISTA's threshold
``clip(v, -lr * lam, lr * lam)`` beside ``lam = max(lam * 0.98, 0.01)``: a product's
rounding follows no model of its own (a message of the three floats missed at 194 of 198
steps before the decay was a model, 113 with it guessed each alone, 10 together: the
decay's warm-up and its floor).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

__all__ = ["next_float", "next_floats", "float_values", "WINDOW", "KEPT", "MARGIN", "RELATED"]

#: the last steps each model is scored on
WINDOW = 6
#: the last steps a model other than the summed one must all have got right to be taken
#: before the window's scores are asked (:func:`next_float`): two windows, each scored as
#: one (:func:`_window`)
LONG = 2 * WINDOW
#: the values a guess is made from, at most: the long run's, and the two its first step takes
KEPT = LONG + 2
#: the more steps of the window a model other than the summed one must have got right: a
#: summed float (``t += 0.01``) that a multiple fits now and then stays summed
MARGIN = 2


def _summed(before: float, last: float) -> float | None:
    return last + (last - before)


def _multiple(before: float, last: float) -> float | None:
    """``b * (s + 1)`` where ``b * s == last`` and ``b * (s - 1) == before`` for an integer
    ``s >= 2``; None where no such ``b`` is found."""
    d = last - before
    if d == 0 or not math.isfinite(d):
        return None
    q = last / d
    if not math.isfinite(q):
        return None
    s = round(q)
    if s < 2 or s >= 1 << 52 or abs(q - s) > 1e-6 * s:
        return None
    b = last / s
    for cand in (b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf)):
        if cand * s == last and cand * (s - 1) == before:
            return cand * (s + 1)
    return None


def _fraction(before: float, last: float) -> float | None:
    """``(s + 1) / m`` where ``s / m == last`` and ``(s - 1) / m == before`` for integers
    ``s`` and ``m >= 1``; None where there are none."""
    d = last - before
    if d == 0 or not math.isfinite(d):
        return None
    inverse = 1 / d
    if not math.isfinite(inverse):
        return None
    m = round(inverse)
    if m < 1 or m >= 1 << 52 or abs(inverse - m) > 1e-6 * m:
        return None
    s = round(last * m)
    if s / m == last and (s - 1) / m == before:
        return (s + 1) / m
    return None


#: the offsets and steps of the affine floats found last (most recent first): a loop's float
#: is found again from them at once, without the search
_AFFINE_FOUND: list[tuple[float, float]] = []
#: the most significant digits a step, and the most decimals an offset, is searched with
_STEP_DIGITS, _OFFSET_DECIMALS = 6, 8


def _affine_next(a: float, b: float, before: float, last: float) -> float | None:
    """``a + b * (s + 1)`` where ``a + b * s == last`` and ``a + b * (s - 1) == before``."""
    q = (last - a) / b
    if not math.isfinite(q) or abs(q) >= 1 << 52:
        return None
    s = round(q)
    if a + b * s == last and a + b * (s - 1) == before:
        return a + b * (s + 1)
    return None


#: answers remembered by their arguments (_remembered): a guess scores the window's steps,
#: all but one of which the guess before scored; each table cleared when it holds this many
_REMEMBERED_MOST = 512
#: _affine's answers by (before, last)
_AFFINE_ANSWERS: dict[tuple[float, float], float | None] = {}


def _remembered(table: dict, key: tuple, make: Callable[..., Any]) -> Any:
    """``make(*key)``, from *table* where it was made before."""
    if key in table:
        return table[key]
    if len(table) >= _REMEMBERED_MOST:
        table.clear()
    answer = table[key] = make(*key)
    return answer


def _affine(before: float, last: float) -> float | None:
    return _remembered(_AFFINE_ANSWERS, (before, last), _affine_search)


def _affine_search(before: float, last: float) -> float | None:
    """``a + b * (s + 1)`` for a loop's ``a + b * s`` (``0.1 + 1e-4 * step``: an offset and
    a step written in few decimal digits, ``s`` its counter), with ``a + b * s == last`` and
    ``a + b * (s - 1) == before``: ``b`` the shortest decimal near ``last - before``, ``a``
    ``last`` rounded to a few decimals; None where there are none such."""
    for a, b in _AFFINE_FOUND:
        guess = _affine_next(a, b, before, last)
        if guess is not None:
            return guess
    d = last - before
    if d == 0 or not math.isfinite(d) or not math.isfinite(last):
        return None
    steps: list[float] = []
    near = 16 * math.ulp(max(abs(last), abs(before)))   # (the two roundings' reach, and more)
    for digits in range(1, _STEP_DIGITS + 1):
        b = float(f"{d:.{digits}g}")
        if b not in steps and abs(b - d) <= near:
            steps.append(b)
    for b in steps:
        decimals = min(_OFFSET_DECIMALS, max(0, -math.floor(math.log10(abs(b)))))
        for a in (0.0, *(round(last, k) for k in range(decimals + 1))):
            guess = _affine_next(a, b, before, last)
            if guess is not None:
                _AFFINE_FOUND.insert(0, (a, b))
                del _AFFINE_FOUND[4:]
                return guess
    return None


#: _geometric's answers by (before, last)
_GEOMETRIC_ANSWERS: dict[tuple[float, float], float | None] = {}
#: the most significant digits a factor is searched with (``lam *= 0.98``)
_FACTOR_DIGITS = 8


def _geometric(before: float, last: float) -> float | None:
    return _remembered(_GEOMETRIC_ANSWERS, (before, last), _geometric_search)


def _geometric_search(before: float, last: float) -> float | None:
    """``last * r`` for a loop's ``lam *= r`` (a decay: ``lr *= 0.99``, an annealed
    temperature): ``r`` the shortest decimal (:data:`_FACTOR_DIGITS` digits at most) near
    ``last / before``, or that quotient or a neighbour of it, with ``before * r == last``;
    None where there is none such (or ``r`` is 1: a float that stays is summed)."""
    if before == 0 or last == before or not math.isfinite(last):
        return None
    q = last / before
    if not math.isfinite(q) or q == 0:
        return None
    # (a decimal of _FACTOR_DIGITS digits or fewer within a few units in the last place of
    # q is q rounded to _FACTOR_DIGITS digits: any other such decimal is far further away)
    r = float(f"{q:.{_FACTOR_DIGITS}g}")
    if abs(r - q) <= 4 * math.ulp(q) and before * r == last:
        return last * r
    for r in (q, math.nextafter(q, math.inf), math.nextafter(q, -math.inf)):
        if before * r == last:
            return last * r
    return None


_MODELS: tuple[Callable[[float, float], float | None], ...] = (_summed, _multiple, _fraction,
                                                                _geometric)
#: which of _MODELS got a step (before, last, next) right, by the step
_HITS: dict[tuple[float, float, float], tuple[bool, ...]] = {}


def _scored(before: float, last: float, after: float) -> tuple[bool, ...]:
    return tuple([model(before, last) == after for model in _MODELS])


def _hits(before: float, last: float, after: float) -> tuple[bool, ...]:
    return _remembered(_HITS, (before, last, after), _scored)


#: each window's scores (the hits of every step within a run of values, and their sums by
#: model), by those values: a loop's next guess scores its one new step on the window the
#: guess before it left (:func:`_window`), not the window's six again (the lane guesses at
#: every message: the six cost ~9 µs of each hot sync's ~60 on the development VM, ~20 of
#: ~120 on an H200 host)
_WINDOWS: dict[tuple, tuple[tuple, tuple]] = {}


def _window(values: tuple) -> tuple[tuple, tuple]:
    """(the hits of each step within *values* (a window's, at most WINDOW + 2), oldest
    first: step ``i`` scored from ``values[i - 2:i + 1]``; their sums by model), from the
    window of ``values[:-1]`` where a guess before left it, and kept for the next guess,
    which looks up its values less its newest: these less their oldest once there are
    WINDOW + 2 of them, else these."""
    n = len(values)
    earlier = _WINDOWS.get(values[:-1]) if n > 3 else None
    if earlier is None:
        steps = tuple([_hits(values[i - 2], values[i - 1], values[i]) for i in range(2, n)])
        sums = tuple([sum(column) for column in zip(*steps)]) if steps else (0,) * len(_MODELS)
    else:
        hit = _hits(values[-3], values[-2], values[-1])
        steps = (*earlier[0], hit)
        sums = tuple([a + b for a, b in zip(earlier[1], hit)])
    if len(_WINDOWS) >= _REMEMBERED_MOST:
        _WINDOWS.clear()
    if n >= WINDOW + 2 and steps:
        first = steps[0]
        _WINDOWS[values[1:]] = (steps[1:], tuple([a - b for a, b in zip(sums, first)]))
    else:
        _WINDOWS[values] = (steps, sums)
    return steps, sums


def next_float(values: Sequence[float]) -> float:
    """The next of *values* (oldest first, at least two; a float parameter's values at a
    stretch's consecutive replays): the summed model's where it got every one of the last
    WINDOW steps exactly right; else the prediction of a model other than the summed one
    (multiple, fraction, then decay) that got every one of the last LONG steps right; else
    of the model that got the most of the last WINDOW steps right (ties to the first of
    summed, multiple, fraction, decay; another than summed must beat it by MARGIN); the
    last value itself
    where the prediction would not be finite.

    Why the long run: a float a loop computes from its counter (``t = i * 0.01``) is
    predicted every time by the multiple, and by the summed model at about half its steps,
    so the window's six often let the summed model stay by MARGIN: ``i * 0.01`` was missed at
    22 of 298 steps, ``i * 0.001`` at 29, ``i * 0.07`` at 27; with it 13, 12 and 7, and
    every summed float as before (the summed model's own run decides first)."""
    values = tuple(values[-KEPT:])
    sure = _sure_guess(values)
    return sure if sure is not None else _scored_guess(values)


def _sure_guess(values: tuple) -> float | None:
    """The guess of a model sure of it: the summed one right at every step of the window, or
    another right at every step of the long run; None where none is (:func:`_scored_guess`
    then), or its guess would not be finite. *values*: KEPT at most."""
    n = len(values)
    if n <= 2:
        return None
    before, last = values[-2], values[-1]
    for i in range(max(2, n - WINDOW), n):   # (the summed model right at every step of the
        b, a = values[i - 1], values[i - 2]   # window is chosen whatever the others scored:
        if b + (b - a) != values[i]:          # none can beat it by MARGIN; a loop's ``t +=
            break                             # dt``, ``step * 0.5``: its guess at once)
    else:
        guess = last + (last - before)
        return guess if math.isfinite(guess) else None
    if n >= LONG + 2:
        steps, scores = _window(values[-(WINDOW + 2):])
        count = len(steps)
        if count in scores:   # (a model right at every step of the window: perhaps at every
            # one of the long run's: the window before it, scored as the window was seven
            # guesses ago, and kept since)
            earlier = _window(values[-(LONG + 2):-WINDOW])[1]
            for m in range(1, len(_MODELS)):
                if scores[m] == count and earlier[m] == WINDOW:
                    guess = _MODELS[m](before, last)
                    if guess is not None and math.isfinite(guess):
                        return guess
    return None


def _scored_guess(values: tuple) -> float:
    """The guess of the model that got the most of the window's steps right (the summed
    one's unless another beat it by MARGIN), where no model is sure (:func:`_sure_guess`);
    the last value where it would not be finite."""
    before, last = values[-2], values[-1]
    best = _summed
    if len(values) > 2:
        window = values[-(WINDOW + 2):]
        steps, scores = _window(window)
        count, n = len(steps), len(window)
        bar = scores[0] + MARGIN   # (another model must beat the summed one by MARGIN)
        for model, score in zip(_MODELS[1:], scores[1:]):
            if score >= bar:
                best, bar = model, score + 1
        if bar <= count and max(scores) < count:
            # (none of the others got every step: an offset and a step, searched only then)
            score = sum(_affine(window[i - 2], window[i - 1]) == window[i] for i in range(2, n))
            if score >= bar:
                best = _affine
    guess = best(before, last)
    if guess is None:
        guess = _summed(before, last)
    return guess if guess is not None and math.isfinite(guess) else last


#: the last values of two floats one must be the other's times one factor at (next_floats):
#: RELATED - 1 pairs at least (fewer let two decays at one rate pair by chance: a review's
#: 1 000 loops of two missed 3 085 messages together against 2 000 alone with four pairs)
RELATED = WINDOW + 1
#: the most floats of one message whose relations are searched (the search is quadratic in
#: them: ten random floats cost ~2 ms a guess); more are each guessed alone
RELATED_MOST = 6
#: a float whose search found no relation is not searched again for this many guesses while
#: its values go on (an unrelated float's search cost each guess otherwise: an Adam-like
#: loop's three floats 125 against 79 µs a guess alone)
SEARCH_AGAIN = 16
#: the factor a float's run of values had to another's, by the float's run less its oldest
#: value: (the other's run less its oldest, the factor) (_related)
_FACTORS: dict[tuple, tuple[tuple, float]] = {}


def next_floats(histories: Sequence[Sequence[float]]) -> list[float]:
    """The next values of one message's floats (*histories*: each one's values, oldest first,
    at least two): each as :func:`next_float` guesses it, but one whose own guess is not sure
    and that was, at each of its last RELATED values, another float's times one factor — that
    float's value in the same message (its sure guess then), or in the message before (its
    last value then) — is that value times the factor: a float the loop makes from another
    (ISTA's threshold ``lr * lam`` and ``-lr * lam`` beside ``lam = lam * 0.98``, which the
    message reads after the step: the products follow the last message's ``lam``); no model
    of a float's own follows a product's rounding.

    A relation to the message before's value found at the last guess, and right at its
    newest pair, is taken first, without asking the float's own models (the lane guesses at
    every message: ISTA's three floats cost ~93 µs a message on an H200 host, run 236, when
    each float's own models were scored first); a float whose own model is sure goes on as
    before where its relation breaks."""
    if len(histories) == 1:   # (most loops: one float that steps)
        return [next_float(histories[0])]
    runs = [tuple(values[-KEPT:]) for values in histories]
    count = len(runs)
    out: list = [None] * count
    for i in range(count):   # (a relation to the message before's value that goes on)
        mine = runs[i][-RELATED + 1:]
        hint = _FACTORS.get(mine[:-1])
        if hint is None:
            continue
        for j in range(count):
            run = runs[j][-RELATED - 1:-1]
            if j != i and run[:-1] == hint[0]:
                factor = _hinted(mine, run)
                if factor is not None and math.isfinite(runs[j][-1] * factor):
                    out[i] = runs[j][-1] * factor
                break
    sure = [_sure_guess(values) if guess is None else None for values, guess in zip(runs, out)]
    for i, guess in enumerate(sure):
        if out[i] is not None:
            continue
        if guess is not None:
            out[i] = guess
            continue
        mine = runs[i][-RELATED:]
        if count > RELATED_MOST or len(mine) < RELATED or _own_fits(runs[i]) \
                or _searched_lately(mine):
            out[i] = _scored_guess(runs[i])
            continue
        for j, theirs in enumerate(sure):
            if j == i:
                continue
            run = runs[j][-RELATED - 1:]
            if theirs is not None:   # (the same message's: its sure guess)
                factor = _related(mine, run[1:])
                if factor is not None and math.isfinite(theirs * factor):
                    out[i] = theirs * factor
                    break
            factor = _related(mine[1:], run[:-1])   # (the message before's: its value)
            if factor is not None and math.isfinite(run[-1] * factor):
                out[i] = run[-1] * factor
                break
        if out[i] is None:
            _UNRELATED[mine[1:]] = SEARCH_AGAIN
            out[i] = _scored_guess(runs[i])
    return out


def _own_fits(values: tuple) -> bool:
    """Whether one of the float's own models got every step of its window right (a decay
    not yet sure for want of the long run's steps: no relation is searched for it, two
    decays at one rate being the other's times a factor at a few pairs by chance)."""
    steps, scores = _window(values[-(WINDOW + 2):])
    return bool(steps) and max(scores) == len(steps)


#: the guesses left before a float whose search found no relation is searched again, by its
#: run less its oldest value (next_floats)
_UNRELATED: dict[tuple, int] = {}


def _searched_lately(mine: tuple) -> bool:
    """Whether *mine*'s run less its newest value was searched for a relation and none was
    found within the last SEARCH_AGAIN guesses (the count then goes on with these values)."""
    left = _UNRELATED.pop(mine[:-1], 0)
    if left <= 1:
        return False
    if len(_UNRELATED) >= _REMEMBERED_MOST:
        _UNRELATED.clear()
    _UNRELATED[mine[1:]] = left - 1
    return True


def _hinted(mine: tuple, theirs: tuple) -> float | None:
    """The factor the runs less their newest pair had where a guess before found it, if it
    is right at the newest pair too (kept for the next guess); else None, nothing searched."""
    hint = _FACTORS.get(mine[:-1])
    if hint is None or hint[0] != theirs[:-1] or theirs[-1] * hint[1] != mine[-1]:
        return None
    _keep_factor(mine, theirs, hint[1])
    return hint[1]


def _keep_factor(mine: tuple, theirs: tuple, factor: float) -> None:
    """*factor* kept for the guess after, which looks up these runs less their oldest pair
    (by the float's own values: one relation a float, its other run beside)."""
    if len(_FACTORS) >= _REMEMBERED_MOST:
        _FACTORS.clear()
    _FACTORS[mine[1:]] = (theirs[1:], factor)


def _related(mine: tuple, theirs: tuple) -> float | None:
    """:func:`_factor` of the two runs, from the factor the runs less their newest pair had
    where a guess before found it (its newest pair checked alone), and kept for the next
    guess, which looks up these runs less their oldest pair: a loop's floats that go on so
    are checked a pair a message, not RELATED."""
    factor = _hinted(mine, theirs)
    if factor is None:
        factor = _factor(mine, theirs)
        if factor is not None:
            _keep_factor(mine, theirs, factor)
    return factor


def _factor(mine: tuple, theirs: tuple) -> float | None:
    """The factor ``c`` with ``t * c == m`` for each of the last values ``m`` of *mine* and
    ``t`` of *theirs*, paired from the newest (RELATED - 1 pairs at least): the quotient of the
    newest pair, or a neighbour within two units in the last place; None where there is
    none."""
    n = min(len(mine), len(theirs))
    if n < RELATED - 1:
        return None
    mine, theirs = mine[-n:], theirs[-n:]
    last = theirs[-1]
    if last == 0 or not math.isfinite(last):
        return None
    q = mine[-1] / last
    if not math.isfinite(q) or q == 0:
        return None
    up, down = math.nextafter(q, math.inf), math.nextafter(q, -math.inf)
    for c in (q, up, down, math.nextafter(up, math.inf), math.nextafter(down, -math.inf)):
        if all(t * c == m for m, t in zip(mine, theirs)):
            return c
    return None


def float_values(history: Sequence[list], i: int) -> list:
    """Parameter *i*'s values over *history* (oldest first), the trailing run of them that
    are floats of lists of the same length as the last."""
    values: list = []
    size = len(history[-1])
    for params in reversed(history):
        if len(params) != size or type(params[i]) is not float:
            break
        values.append(params[i])
    values.reverse()
    return values
