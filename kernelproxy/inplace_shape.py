"""``a.shape = s``: CuPy gives an array a new shape in place when the new shape is a view
of the same memory, and refuses (``AttributeError``) when it would need a copy.

Whether a view is possible depends only on the shape, the strides and the item size, so
NumPy answers it here, on a stand-in with the same layout over one element
(``np.reshape(copy=False)`` computes the new strides and never reads the memory); the
pool then makes the view and the array takes it over.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["view_shape"]

_NEEDS_COPY = ("Incompatible shape for in-place modification. Use `.reshape()` to make a "
               "copy with the desired shape.")


def view_shape(shape: tuple, strides: tuple, itemsize: int, new: Any) -> tuple[int, ...]:
    """The new shape (``-1`` resolved) if the layout allows a view; else CuPy's error."""
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=f"V{itemsize}"), shape, strides)
    try:
        return np.reshape(stand_in, new, copy=False).shape
    except TypeError:   # NumPy < 2.1: no copy argument; its shape setter says the same
        view = stand_in.view()
        try:
            view.shape = new
        except AttributeError:
            raise AttributeError(_NEEDS_COPY) from None
        return view.shape
    except ValueError as exc:
        if "copy" in str(exc):
            raise AttributeError(_NEEDS_COPY) from None
        raise
