"""A narrow float parameter's guess (worker/run_ahead.py ``guess_params``): a value the
client rounded to a NumPy float type narrower than a Python float (``np.float32(i * dt)``,
a kernel's time) is guessed rounded to that type, from the straight line its last values
lie on where they do (the float models of worker/float_steps.py see the client's roundings
as the step's own, and missed by an ulp every other step)."""

from __future__ import annotations

import math
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
    ulp = float(np.spacing(narrow(abs(ahead)))) if ahead == ahead else 0.0
    if not ulp:
        return ahead
    line = _next_on_line(values)
    if abs(line - guess) <= 4 * ulp:
        return float(narrow(line))
    decay = _next_on_curve(values)   # (``np.float32(0.1 * 0.97 ** i)``: a line of logs)
    if decay is not None and abs(decay - values[-1]) <= 4 * abs(values[-1] - values[-2]) + 4 * ulp:
        return float(narrow(decay))
    return ahead


def _line(values: list) -> tuple[float, float, float]:
    """The straight line fitted to *values* (at 0, 1, …) by least squares: its mean x,
    its mean y and its slope."""
    k = len(values)
    mean_x = (k - 1) / 2
    mean_y = sum(values) / k
    slope = sum((j - mean_x) * (v - mean_y) for j, v in enumerate(values)) / \
        sum((j - mean_x) ** 2 for j in range(k))
    return mean_x, mean_y, slope


def _next_on_line(values: list) -> float:
    """The next value of the straight line fitted to *values* by least squares."""
    mean_x, mean_y, slope = _line(values)
    return mean_y + slope * (len(values) - mean_x)


def _next_on_curve(values: list) -> float | None:
    """The next value of a geometric run (a decay or a growth: ``lam *= 0.98`` sent as
    float32) fitted to *values* by least squares over their logarithms, where they are
    all of one sign, none zero, and their logarithms lie on a line to within the
    roundings (a relative 1e-6: float32's is 6e-8); None otherwise. The fit averages the
    client's roundings out, as :func:`_next_on_line`'s does for a line."""
    sign = 1.0 if values[0] > 0 else -1.0
    if any(v * sign <= 0 or v != v or v in (math.inf, -math.inf) for v in values):
        return None
    logs = [math.log(v * sign) for v in values]
    mean_x, mean_y, slope = _line(logs)
    if not slope or any(abs(mean_y + slope * (j - mean_x) - v) > 1e-6 for j, v in enumerate(logs)):
        return None
    return sign * math.exp(mean_y + slope * (len(logs) - mean_x))
