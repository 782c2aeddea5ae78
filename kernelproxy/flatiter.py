"""``ndarray.flat``: CuPy's flat iterator over a remote array.

CuPy's ``flatiter`` takes an int, a slice or ``...`` (C order over the whole array) and
nothing else (``IndexError``); a slice assigned a shorter value repeats it, as NumPy
does. Built here from ops the pool already has: an element is ``base[unravelled]``, a
slice of a C-contiguous array is a slice of its flat view, and any other layout goes
through ``cupy.unravel_index``. Only the metadata (shape, size) is needed on the client.
"""

from __future__ import annotations
from .state import namespace

import numbers
from typing import Any

__all__ = ["flatiter"]


def _unsupported() -> IndexError:
    return IndexError("unsupported iterator index")


class flatiter:
    """``cupy.flatiter``: returned by ``x.flat``; iterates over ``x`` as if it were 1-D."""

    def __init__(self, base: Any) -> None:
        self._base = base
        self._index = 0

    @property
    def base(self) -> Any:
        """The array that is iterated over."""
        return self._base

    def __len__(self) -> int:
        return self._base.size

    def __iter__(self) -> "flatiter":
        return self

    def __next__(self) -> Any:
        index = self._index
        if index == len(self):
            raise StopIteration
        self._index += 1
        return self[index]

    def copy(self) -> Any:
        """A copy of the whole array, flattened (wherever the iterator stands)."""
        return self._base.flatten()

    def _position(self, index: Any) -> tuple:
        """The multi-index of a flat *index* (NumPy's range check, negatives from the end)."""
        size = self._base.size
        index = int(index)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"index {index} is out of bounds for size {size}")
        position = []
        for extent in reversed(self._base.shape):
            index, rest = divmod(index, extent)
            position.append(rest)
        return tuple(reversed(position))

    def _flat_indices(self, key: slice) -> Any:
        """``(flat view, slice)`` of a C-contiguous base, else the unravelled positions."""
        base = self._base
        if base.flags.c_contiguous:
            return base.reshape(-1), key
        cp = namespace()["cupy"]
        start, stop, step = key.indices(base.size)
        return base, cp.unravel_index(cp.arange(start, stop, step), base.shape)

    def __getitem__(self, key: Any) -> Any:
        if key is Ellipsis:
            key = slice(None)
        if isinstance(key, (tuple, bool)):
            raise _unsupported()
        if isinstance(key, numbers.Integral):
            return self._base[self._position(key)].copy()
        if isinstance(key, slice):
            target, index = self._flat_indices(key)
            return target[index].copy()
        raise _unsupported()

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is Ellipsis:
            key = slice(None)
        if isinstance(key, (tuple, bool)):
            raise _unsupported()
        if isinstance(key, numbers.Integral):
            self._base[self._position(key)] = value
            return
        if not isinstance(key, slice):
            raise _unsupported()
        cp = namespace()["cupy"]
        base = self._base
        count = len(range(*key.indices(base.size)))
        if count == 0:
            return
        values = cp.asarray(value, dtype=base.dtype).ravel()
        if values.size != count:   # shorter (or longer) values repeat in order, as in NumPy
            values = cp.resize(values, count)
        target, index = self._flat_indices(key)
        target[index] = values
