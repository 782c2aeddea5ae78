"""``split`` and its family issued as basic slices, one view an op (issue 50).

A call of several results (kernelproxy/result_structures.py) is issued without a wait, but
a stretch holding one is never held: the worker's held stretches know one result an op
(kernelproxy/stretch_key.py). So a loop whose body splits an array (``chunks =
xp.split(x, 4)``, ``xp.array_split(batch, k)``) was never replayed: its every op went eager.

CuPy's ``array_split`` (``cupy/_core/_routines_manipulation.pyx``), which ``split``,
``hsplit``, ``vsplit`` and ``dsplit`` all call, makes each piece a view of the array: its
data pointer ``prev * stride`` on along the axis, its shape the array's with that axis
``index - prev`` long, the array's own strides. Where the indices go on within the axis
and no piece is empty, that is exactly the basic slice ``x[..., prev:index]`` along the axis (the
same pointer, shape, strides, flags and base), so the pieces are issued as such slices:
ops of one result each, whose bounds are a stretch's parameters (a moving slice), held and
replayed as any other. The pieces are the same arrays bit for bit, views of the same
memory: a write through one is seen through the array, as in CuPy.

Left to the call itself (the waiting path's checks and CuPy's errors, or the count path):
an array whose shape the client does not know now, of no element or no dimension, an axis
it lacks, an equal split that does not divide, indices that go back or out of the axis
(CuPy's pointer arithmetic differs from a slice's there), a piece of no element (its
pointer), and a split into one piece (CuPy returns the array itself, not a view).
"""

from __future__ import annotations

from typing import Any

from .result_structures import dsplit_axis, hsplit_axis, is_int, known_shape, meta_unknown, vsplit_axis

__all__ = ["pieces", "undecided"]

#: each name's axis, from the array's ndim (None: the call's ``axis``); the rules
#: result_structures tells the count by
_AXIS_OF = {"split": None, "array_split": None, "hsplit": hsplit_axis, "vsplit": vsplit_axis,
            "dsplit": dsplit_axis}


def pieces(name: Any, args: tuple, kwargs: dict | None) -> tuple[int, list] | None:
    """``(axis, [(lo, hi), ...])``, the slices along *axis* that give the function *name*'s
    pieces of ``args[0]`` (``split(x, 4)``, ``array_split(x, [2, 5], axis=1)``, …) exactly,
    where they do; else None (the call goes as a call)."""
    if name not in _AXIS_OF or len(args) < 2:
        return None
    shape = known_shape(args[0])
    if not shape or 0 in shape:
        return None
    ndim = len(shape)
    axis_of = _AXIS_OF[name]
    if axis_of is not None:
        if len(args) != 2 or kwargs:
            return None
        axis = axis_of(ndim)
    else:
        if len(args) > 3 or (kwargs and set(kwargs) != {"axis"}) or (kwargs and len(args) > 2):
            return None
        axis = kwargs["axis"] if kwargs else (args[2] if len(args) > 2 else 0)
    if axis is None or not is_int(axis) or not -ndim <= axis < ndim:
        return None
    axis = int(axis) % ndim
    size = shape[axis]
    sections = args[1]
    if isinstance(sections, (list, tuple)):
        if not sections or not all(is_int(i) for i in sections):
            return None
        indices = [int(i) if i >= 0 else size + int(i) for i in sections]
        if any(not 0 < i < size for i in indices):
            return None
    elif is_int(sections) and sections > 1:
        sections = int(sections)
        if name != "array_split" and size % sections:
            return None   # (CuPy's ValueError: left to the call)
        each, large = (size - 1) // sections, (size - 1) % sections + 1   # (CuPy's own)
        indices = [i * each + min(i, large) for i in range(1, sections)]
    else:
        return None
    bounds = list(zip([0, *indices], [*indices, size]))
    if any(lo >= hi for lo, hi in bounds):
        return None   # (an empty piece: CuPy's pointer for it is not a slice's to the bit)
    return axis, bounds


def undecided(name: Any, args: tuple) -> bool:
    """Whether the call *name* goes as a call now only for want of ``args[0]``'s shape,
    which a later one of the same code may have, its pieces then slices: a stretch that
    took the call in would not be the stretch its later runs make (Session.submit_arrays
    keeps it out)."""
    if name not in _AXIS_OF or len(args) < 2 or not meta_unknown(args[0]):
        return False
    sections = args[1]   # (one piece, or no index: CuPy's own array, never slices)
    if isinstance(sections, (list, tuple)):
        return bool(sections)
    return not (is_int(sections) and sections <= 1)
