"""``cupy.random._sample``: uniform samples, integers, choice and multinomial, from the
current device's global RandomState. Each function calls the next through this module
(``random_integers`` through ``randint``, ``rand`` through ``random_sample``), as CuPy's do."""

from __future__ import annotations

import math
from typing import Any

from . import _distributions, _generator
from ..state import namespace

__all__ = ["rand", "randn", "randint", "random_integers", "random_sample", "choice", "multinomial"]


def rand(*size: Any, **kwarg: Any) -> Any:
    """Uniform samples in [0, 1) of shape *size*."""
    dtype = kwarg.pop("dtype", float)
    if kwarg:
        raise TypeError(f"rand() got unexpected keyword arguments {', '.join(kwarg)}")
    return random_sample(size=size, dtype=dtype)


def randn(*size: Any, **kwarg: Any) -> Any:
    """Standard normal samples of shape *size*."""
    dtype = kwarg.pop("dtype", float)
    if kwarg:
        raise TypeError(f"randn() got unexpected keyword arguments {', '.join(kwarg)}")
    return _distributions.normal(size=size, dtype=dtype)


def randint(low: Any, high: Any = None, size: Any = None, dtype: Any = "l") -> Any:
    """Integers in [low, high) (or [0, low) without *high*)."""
    return _generator.get_random_state().randint(low, high, size, dtype)


def random_integers(low: Any, high: Any = None, size: Any = None) -> Any:
    """Integers in [low, high] (or [1, low] without *high*)."""
    if high is None:
        low, high = 1, low
    return randint(low, high + 1, size)


def random_sample(size: Any = None, dtype: Any = float) -> Any:
    """Uniform samples in [0, 1)."""
    return _generator.get_random_state().random_sample(size=size, dtype=dtype)


def choice(a: Any, size: Any = None, replace: Any = True, p: Any = None) -> Any:
    """Samples of ``a`` (an array, or ``arange(a)``), uniform or with probabilities *p*."""
    return _generator.get_random_state().choice(a, size, replace, p)


def multinomial(n: int, pvals: Any, size: Any = None) -> Any:
    """Counts of *n* trials over ``len(pvals)`` outcomes, per sample of shape *size*.

    Drawn as CuPy draws them: ``n`` choices per sample, counted per outcome (here with
    one ``bincount`` over sample-major outcome indices, all of it in the pool).
    """
    cp = namespace()["cupy"]
    shape = () if size is None else (size,) if isinstance(size, int) else tuple(size)
    samples = math.prod(shape)
    outcomes = len(pvals)
    if samples * outcomes == 0:
        return cp.zeros(shape + (outcomes,), "l")
    picks = choice(outcomes, p=pvals, size=n * samples)
    slots = cp.arange(n * samples, dtype="l") // max(n, 1) * outcomes + picks
    counts = cp.bincount(slots, minlength=samples * outcomes)
    return counts.astype("l", copy=False).reshape(shape + (outcomes,))
