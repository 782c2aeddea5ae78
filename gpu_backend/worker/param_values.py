"""The host side of a captured stretch's parameters (worker/graph_replay.py).

A stretch's scalar parameters (the ``0.37 * step`` of ``x + 0.37 * step``) live in one
device block its graphs read, written from a host copy before a launch. Each parameter has
a 0-d view of its dtype into that host copy; a replay writes a value there only where it
changed (each write cost 1-2 µs of an H200 host's worker), and the block is copied to the
device only while the host copy differs from it (:attr:`ParamValues.dirty`: a copy cost
~7 µs). "Unchanged" is strict: the same type and an equal value, never a zero (0.0 and -0.0
are equal and other bits), and never after a write that failed part-way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ParamValues"]

#: The types a parameter's value may have (besides NumPy's scalars)
_SCALARS = frozenset((bool, int, float, complex))


class ParamValues:
    """Each parameter's 0-d host view (by parameter slot), what was last written into it,
    and whether the host copy differs from the device's block."""

    def __init__(self) -> None:
        self.views: dict[int, np.ndarray] = {}
        #: the value last written into each parameter's place
        self._written: dict[int, Any] = {}
        #: the whole list of the last :meth:`write` that put every value in, and its types
        self._last: list | None = None
        self._last_types: list | None = None
        #: the host copy differs from the device's block (a value, or a copy table's row
        #: beside them, changed): the block is copied before the next launch
        self.dirty = True

    def add(self, n: int, view: np.ndarray, value: Any) -> None:
        """While capturing: parameter *n*'s place, *value* written into it."""
        self.views[n] = view
        view[()] = value
        self.dirty = True

    def write(self, params: list) -> bool:
        """A replay's parameter values into their places, as NumPy casts them (``np.array(value,
        dtype)``); False where one is not a number or does not fit its dtype (OverflowError):
        the replay's guards failed. The same list as the last one written whole, with no zero
        in it, writes nothing."""
        if params == self._last and self._last is not None and 0.0 not in params \
                and list(map(type, params)) == self._last_types:
            return True
        scalars, written = _SCALARS, self._written
        self._last = None   # (until every value is in: a write that fails leaves others written)
        overflowed = False
        for n, view in self.views.items():
            value = params[n]
            kind = type(value)
            if kind is float or kind is int:
                last = written.get(n)   # (the same value of the same type: the same bits,
                if type(last) is kind and last == value and (kind is int or value != 0.0):
                    continue            # in place already; a zero's sign is not ==)
            elif kind not in scalars and not isinstance(value, np.generic):
                return False
            self.dirty = True   # (set first: a failed write may have changed the bytes)
            try:
                view[()] = value
            except (TypeError, ValueError, OverflowError):
                written.pop(n, None)
                return False
            if (kind is int or (kind is float and math.isfinite(value))) \
                    and view.dtype.kind in "fc" and not math.isfinite(abs(view.item())):
                # a finite value past its dtype's range: the cast warns ("overflow encountered
                # in cast") as the op run eagerly would, at every replay — so it is written
                # again each time, never taken as in place already
                written.pop(n, None)
                overflowed = True
                continue
            written[n] = value
        if not overflowed:
            self._last, self._last_types = list(params), list(map(type, params))
        return True
