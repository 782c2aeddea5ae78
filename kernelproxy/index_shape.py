"""The shape a basic index gives an array, by NumPy's rules: what a held stretch's template
checks when a ``getitem``'s bounds are parameters (``x_all[j:j + batch]``,
protocol/stretches.basic_index). The template hands out its recorded result's metadata, and
every op after it follows from that shape: a run whose bounds give another (an epoch's last,
shorter batch) must not be answered from it."""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["basic_index_shape"]


def basic_index_shape(shape: tuple, index: Any) -> tuple | None:
    """The shape of ``a[index]`` for an array *a* of *shape*, *index* basic (ints, slices,
    ``None``, ``...``, or a tuple of them); None where NumPy would raise (an int out of
    range, too many indices, two ellipses) or the index is not basic."""
    parts = index if type(index) is tuple else (index,)
    ellipses = sum(1 for p in parts if p is Ellipsis)
    if ellipses > 1:
        return None
    taking = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if taking > len(shape):
        return None
    out: list[int] = []
    axis = 0
    for part in parts:
        if part is None:
            out.append(1)
        elif part is Ellipsis:
            skip = len(shape) - taking
            out.extend(shape[axis:axis + skip])
            axis += skip
        elif type(part) is slice:
            try:
                start, stop, step = part.indices(shape[axis])
            except (TypeError, ValueError):   # (a zero step, a part that is no int)
                return None
            out.append(len(range(start, stop, step)))
            axis += 1
        else:
            try:
                i = operator.index(part)
            except TypeError:
                return None
            if type(part) is bool or not -shape[axis] <= i < shape[axis]:
                return None
            axis += 1
    out.extend(shape[axis:])
    return tuple(out)
