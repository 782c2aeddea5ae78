"""A narrow float parameter's guess (worker/run_ahead.py ``guess_params``): a value the
client rounded to a NumPy float type narrower than a Python float (``np.float32(i * dt)``,
a kernel's time) is guessed rounded to that type, from the straight line its last values
lie on where they do (the float models of worker/float_steps.py see the client's roundings
as the step's own, and missed by an ulp every other step)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NARROW_FLOATS", "narrowed"]

#: NumPy float types narrower than a Python float: a guess is rounded to them
NARROW_FLOATS = frozenset((np.float32, np.float16))
#: the most of a narrow float's last values a straight line is fitted to
_LINE_SPAN = 8


def narrowed(narrow: Any, run: list, guess: float) -> float:
    """*guess*, the next of *run* (a parameter's last values, each rounded to the NumPy
    float type *narrow* by the client: ``np.float32(i * dt)``), rounded to *narrow*. The
    models of worker/float_steps.py see the roundings as the step's own, and miss by an
    ulp at most every other step; where the values lie on a straight line, the line fitted
    by least squares over the last :data:`_LINE_SPAN` of them averages the roundings out,
    and its next value is the guess (where it is within a few ulps of the models')."""
    ahead = float(narrow(guess))
    values = run[-_LINE_SPAN:]
    k = len(values)
    if k < 3:
        return ahead
    mean_x = (k - 1) / 2
    mean_y = sum(values) / k
    slope = sum((j - mean_x) * (v - mean_y) for j, v in enumerate(values)) / \
        sum((j - mean_x) ** 2 for j in range(k))
    line = mean_y + slope * (k - mean_x)
    ulp = float(np.spacing(narrow(abs(ahead)))) if ahead == ahead else 0.0
    if not ulp or abs(line - guess) > 4 * ulp:
        return ahead
    return float(narrow(line))
