"""The next value of a loop's float parameter, guessed exactly from its last few (issue 50).

A replay run ahead, and the steady lane's next message, take the loop's next parameters as
a guess; a float guessed one bit off is a run ahead dropped and the lane left. The guess was
``last + (last - before)``, exact for a float that steps exactly (``step * 0.5``) or is
summed (``t += 0.1``), but not for one a loop computes from its counter: ``t = i * dt``
with ``dt = 0.01`` rounds otherwise than ``t + dt`` at 133 of 300 steps, and
``programs.py``'s random walk's ``0.1 + 1e-4 * step`` at 147 (the lane left 127 times over
its 2 396 replays on an H200, run 151).

So each float is guessed by one of six models of how a loop makes it, the one that
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
- *harmonic*: ``a / (1.0 + b * s)`` (a step size annealed as ``eta / (1.0 + decay *
  step)``), ``a`` a decimal of two digits at most, ``b`` then ``a * (1 / last - 1 /
  before)`` in six, ``s`` found from them, both values exact. Searched, before the offset
  and multiple, only where none of the scored models got every step of the window right and
  the window's reciprocals go on by one step (as a harmonic float's do); ~0.4 ms a search,
  each (before, last) once, the pairs found tried first after.

Each step's hits are remembered (:func:`_hits`), and each window's scores (:func:`_window`):
a guess scores its one new step on the window the guess before it left. Where the summed
model got every step of the long run right, none of the others can beat it and its guess is
taken at once (a loop's ``t += dt`` or ``step * 0.5``, the common case: 1.2 against 4.1 µs
a guess on the development VM; the lane guesses at every message). A model other than the
summed one right at every step of the long run comes before the summed one right at the
window's (:func:`sure_guess`). Both shortcuts give
the rule's guess bit for bit (tests/gpu_backend/test_float_steps.py scores every window
whole beside them).

Over 298 steps of each (the guess from the values before it, KEPT at most): ``i * 0.01``
6 misses (133 summed; 22 before the long run of :func:`next_float`, 13 before it came
before the summed model's window), ``i * 0.1`` 3 (190; 6), ``i / 3`` 2 (201), ``i / 100``
11 (133; 15), ``0.1 + 1e-4 * i`` 5 (147; 10), ``2.5 - 0.003 * i`` 2 (153), ``1.0 + i * 0.1``
from ``i = 1000`` 18 (231), ``t += 0.1`` 3 (3), ``t += 0.01`` 6 (6), ``step * 0.5`` 0 (0);
``-i * 0.01`` from ``i = 1000`` 4 (72; 38 while the summed model's window came first), and
``0.25 + i / 7`` (a step no short decimal is) as often as summed (162); ``lr *= 0.99``,
``x *= 0.5``, ``lam *= 0.98`` 2 each (the first two guesses; 116–296 before the decay was a model); ``0.05 / (1.0 + 0.02 * s)``,
``0.3 / (1.0 + 1e-4 * s)`` 2 and 3 (the harmonic's warm-up).

One message's floats are guessed together by worker/float_relations.py (a float the loop
makes from another: ``lr * lam``, ``sqrt(2 * eta_t)``).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

__all__ = ["next_float", "scored_guess", "sure_guess", "float_values", "WINDOW", "KEPT", "MARGIN"]

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


#: the numerators and steps of the harmonic floats found last (most recent first)
_HARMONIC_FOUND: list[tuple[float, float]] = []
#: _harmonic's answers by (before, last)
_HARMONIC_ANSWERS: dict[tuple[float, float], float | None] = {}
#: the most significant digits a harmonic float's numerator is searched with, and its
#: exponents
_NUMERATOR_DIGITS, _NUMERATOR_EXPONENTS = 2, range(-7, 4)


def _harmonic_next(a: float, b: float, before: float, last: float) -> float | None:
    """``a / (1.0 + b * (s + 1))`` where ``a / (1.0 + b * s) == last`` and ``a / (1.0 + b *
    (s - 1)) == before``."""
    if not last > 0 or not b > 0:
        return None
    q = (a / last - 1.0) / b
    if not math.isfinite(q) or not 1 <= q < 1 << 52:
        return None
    s = round(q)
    if a / (1.0 + b * s) == last and a / (1.0 + b * (s - 1)) == before:
        return a / (1.0 + b * (s + 1))
    return None


def _harmonic(before: float, last: float) -> float | None:
    return _remembered(_HARMONIC_ANSWERS, (before, last), _harmonic_search)


def _harmonic_search(before: float, last: float) -> float | None:
    """``a / (1.0 + b * (s + 1))`` for a loop's ``a / (1.0 + b * s)`` (a step size annealed as
    ``eta / (1.0 + decay * step)``: ``a`` and ``b`` written in few digits, ``s`` its counter):
    ``a`` a decimal of _NUMERATOR_DIGITS digits, ``b`` then ``a * (1 / last - 1 / before)``
    rounded to a few digits, ``s`` found from them, with both values exact; None where there
    are none such. (~0.4 ms a search on the development VM: searched only where the window's
    reciprocals go on by a fixed step, :func:`_reciprocals_step`, and each pair once.)"""
    for a, b in _HARMONIC_FOUND:
        guess = _harmonic_next(a, b, before, last)
        if guess is not None:
            return guess
    if not (0 < last < before) or not math.isfinite(before):
        return None
    slope = 1.0 / last - 1.0 / before
    for exponent in _NUMERATOR_EXPONENTS:
        for mantissa in range(1, 10 ** _NUMERATOR_DIGITS):
            if mantissa >= 10 and mantissa % 10 == 0:
                continue   # (the same decimal as mantissa // 10, tried already)
            a = float(f"{mantissa}e{exponent}")   # (the decimal's double, as a literal's)
            if a < last:
                continue
            b = float(f"{a * slope:.6g}")
            if b > 0:
                guess = _harmonic_next(a, b, before, last)
                if guess is not None:
                    _HARMONIC_FOUND.insert(0, (a, b))
                    del _HARMONIC_FOUND[4:]
                    return guess
    return None


def _reciprocals_step(window: tuple) -> bool:
    """Whether the reciprocals of *window*'s values (three at least, positive, falling) go
    on by one step, to within rounding: a harmonic float's do; a decay's, a counter's
    multiple's, a sum's do not (their second differences are far above rounding)."""
    if len(window) < 3 or not all(v > 0 for v in window):
        return False
    inverse = [1.0 / v for v in window]
    first = inverse[-1] - inverse[0]
    if not first > 0 or not math.isfinite(first):
        return False
    steps = len(inverse) - 1
    return all(abs(inverse[i + 1] - inverse[i] - first / steps) <= 1e-9 * first
               for i in range(steps))


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
    LONG steps exactly right; else the prediction of a model other than the summed one
    (multiple — or an offset and a multiple where that too got them all —, fraction,
    decay, an offset and a multiple, harmonic) that got every one of the last LONG steps
    right; else the summed model's where it got every one of the last WINDOW steps; else
    of the model that got the most of the last WINDOW steps right (ties to the first of
    summed, multiple, fraction, decay; another than summed must beat it by MARGIN); the
    last value itself where the prediction would not be finite.

    Why the long run: a float a loop computes from its counter (``t = i * 0.01``) is
    predicted every time by the multiple, and by the summed model at about half its steps,
    so the window's six often let the summed model stay by MARGIN: ``i * 0.01`` was missed at
    22 of 298 steps, ``i * 0.001`` at 29, ``i * 0.07`` at 27; with it 13, 12 and 7, and
    every summed float as before (the summed model's own run decides first). Since the
    forty-second session the long run comes before the summed model's window: ``i * 0.01``
    6 misses, ``0.1 + 1e-4 * i`` 5, ``-i * 0.01`` from 1000 4 (38)."""
    values = tuple(values[-KEPT:])
    sure = sure_guess(values)
    return sure if sure is not None else scored_guess(values)[0]


def sure_guess(values: tuple) -> float | None:
    """The guess of a model sure of it: the summed one right at every step of the long run;
    else another right at every step of the long run (multiple, fraction, decay, then an
    offset and a step, then harmonic); else the summed one right at every step of the window;
    None where none is (:func:`scored_guess` then), or its guess would not be finite.
    *values*: KEPT at most.

    Why another's long run first: a float the summed model gets at most steps and misses
    now and then (``0.1 + 1e-4 * step``: half its steps; ``-i * 0.01`` from 1000) had the
    summed guess whenever it got the window's six, and missed where the summed model did
    next (the random walk's lane left at 8 of its 200 steps, 21 roll-backs in three runs on
    an H200, run 248). A model right at all the long run's twelve steps where the summed
    one missed one of them is the loop's way, and stays until it misses.

    Each model's run of right steps ending at the newest value is kept from the guess before
    (:func:`_runs`): a loop's next guess scores its one new step, not the long run's twelve."""
    n = len(values)
    if n <= 2:
        return None
    before, last = values[-2], values[-1]
    long_run = n >= LONG + 2
    for i in range(n - 1, max(1, n - 1 - LONG) if long_run else max(1, n - 1 - WINDOW), -1):
        b = values[i - 1]                   # (the summed model right at every step of the
        if b + (b - values[i - 2]) != values[i]:   # run, the common case, checked first:
            break                           # a loop's ``t += dt``, ``step * 0.5``, at once)
    else:
        guess = last + (last - before)
        return guess if math.isfinite(guess) else None
    runs = _runs(values)   # (the summed model's run is shorter than that checked above)
    if long_run:
        for m in range(1, len(_MODELS)):   # (multiple, fraction, decay)
            if runs[m] >= LONG:
                model = _MODELS[m]
                if model is _multiple and _lazy_reaches(runs, _AFFINE, _affine, values):
                    # (``0.1 + 1e-4 * s`` is also ``1e-4 * (s + 1000)`` at most steps: an
                    # offset found where the multiple missed is the loop's way)
                    model = _affine
                guess = model(before, last)
                if guess is not None and math.isfinite(guess):
                    return guess
        searched = ((_AFFINE, _affine), (_HARMONIC, _harmonic)) \
            if _reciprocals_step(values[-(WINDOW + 2):]) else ((_AFFINE, _affine),)
        for at, model in searched:
            if _lazy_reaches(runs, at, model, values):
                guess = model(before, last)
                if guess is not None and math.isfinite(guess):
                    return guess
    if runs[0] >= WINDOW:   # (the summed model right at every step of the window)
        guess = last + (last - before)
        return guess if math.isfinite(guess) else None
    return None


#: where _runs' lists keep the offset-and-multiple's and the harmonic's runs (after _MODELS'),
#: found only where a guess asks for them (:func:`_lazy_reaches`; None: not known)
_AFFINE, _HARMONIC = len(_MODELS), len(_MODELS) + 1
#: each float's runs (_runs), by its values less the oldest where they are KEPT, else by its
#: values: the key its next guess looks up by its values less the newest
_RUNS: dict[tuple, list] = {}


def _runs(values: tuple) -> list:
    """Each model's run of right steps ending at *values*' newest (_MODELS', then the
    offset-and-multiple's and the harmonic's: pending or bounded where a guess before found
    them, :func:`_lazy_reaches`, else None), at most their steps: from the runs of the guess
    of *values* less the newest, kept by it, and the newest step scored; else scored back
    from the newest."""
    n = len(values)
    steps = n - 2
    earlier = _RUNS.get(values[:-1]) if n > 3 else None
    if earlier is not None:
        hit = _hits(values[-3], values[-2], values[-1])
        runs = [min(r + 1, steps) if h else 0 for r, h in zip(earlier, hit)]
        # (the lazy ones stepped only where asked for, each a model's call, a search where
        # its pair is new: the run the guess before found, pending; one it left pending or
        # bounded, a bound one step higher)
        for r in earlier[_AFFINE:]:
            runs.append(None if r is None else ("p", r) if type(r) is int
                        else ("u", r[1] + 2) if r[0] == "p" else ("u", r[1] + 1))
    else:
        runs = [0] * len(_MODELS)
        open_models = set(range(len(_MODELS)))
        for i in range(n - 1, 1, -1):
            hit = _hits(values[i - 2], values[i - 1], values[i])
            for m in list(open_models):
                if hit[m]:
                    runs[m] += 1
                else:
                    open_models.discard(m)
            if not open_models:
                break
        runs += [None, None]
    if len(_RUNS) >= _REMEMBERED_MOST:
        _RUNS.clear()
    _RUNS[values[1:] if n >= KEPT else values] = runs
    return runs


def _lazy_reaches(runs: list, at: int, model: Callable[[float, float], float | None],
                  values: tuple) -> bool:
    """Whether *model*'s run (``runs[at]``) is the long run's LONG steps: where the guess
    before found it (pending, ``("p", run)``) one more than it cannot reach LONG, it is
    bounded (``("u", bound)``: its run is at most that) without a call; a pending run that
    can is stepped by the newest step; a bound that reaches LONG, or a run not known
    (None), is scored back from the newest. Kept in *runs* for the next guess. (A harmonic
    float's offset-and-multiple missed at every step, a search each: now one in LONG.)"""
    r = runs[at]
    n = len(values)
    if type(r) is tuple:
        kind, k = r
        if kind == "p":
            if k + 1 < LONG:
                runs[at] = ("u", k + 1)
                return False
            r = min(k + 1, n - 2) if model(values[-3], values[-2]) == values[-1] else 0
            runs[at] = r
            return r >= LONG
        if k < LONG:
            return False
        r = None
    if r is None:
        r = 0
        for i in range(n - 1, 1, -1):
            if model(values[i - 2], values[i - 1]) != values[i]:
                break
            r += 1
        runs[at] = r
    return r >= LONG


def scored_guess(values: tuple) -> tuple[float, bool]:
    """The guess of the model that got the most of the window's steps right (the summed
    one's unless another beat it by MARGIN), where no model is sure (:func:`sure_guess`), or
    the last value where it would not be finite; and whether that model got every step of
    the window right. Where none of the models scored in the window did: an offset and a step
    (affine) searched, then a harmonic float, where the window's reciprocals go on by one
    step."""
    before, last = values[-2], values[-1]
    best = _summed
    fits = False
    if len(values) > 2:
        window = values[-(WINDOW + 2):]
        steps, scores = _window(window)
        count, n = len(steps), len(window)
        bar = scores[0] + MARGIN   # (another model must beat the summed one by MARGIN)
        fits = scores[0] == count
        for model, score in zip(_MODELS[1:], scores[1:]):
            if score >= bar:
                best, bar, fits = model, score + 1, score == count
        if bar <= count and max(scores) < count:
            # (none of the others got every step: an offset and a step, searched only then)
            # (or a harmonic float, searched first where the window's reciprocals go on by
            # one step, as a harmonic float's do and an affine one's do not)
            searched = (_harmonic, _affine) if _reciprocals_step(window) else (_affine,)
            for model in searched:
                score = sum(model(window[i - 2], window[i - 1]) == window[i] for i in range(2, n))
                if score >= bar:
                    best, bar, fits = model, score + 1, score == count
                if fits:
                    break
    guess = best(before, last)
    if guess is None:
        guess, fits = _summed(before, last), False
    return (guess, fits) if guess is not None and math.isfinite(guess) else (last, False)


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
