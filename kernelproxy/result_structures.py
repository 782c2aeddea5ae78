"""How many arrays a call of several results gives, told from its arguments alone (issue 50).

A function of several results (``divmod``, ``modf``, ``frexp``, ``split``, ``meshgrid``,
``nonzero``, ``unique(..., return_counts=True)``, ``linalg.qr``, …) is a ``MULTI`` name: in
general the client cannot know what it returns (``linalg.lstsq``'s rank is a value,
``ndimage.label``'s count an int), so it waits for the structure, a round trip each call.
For the calls here the count of arrays follows from the arguments. The client then names
the arrays itself and goes on, as for one array (``api.ARRAYS``; the worker checks that it
got that many arrays: worker/batch_results.py); their metadata comes with the batch's reply.

Left to the waiting path, so that its error is raised at the call as in CuPy: a call whose
arguments CuPy refuses given what the client knows of its arrays' metadata (``split(x, 3)``
of 8 elements, ``vsplit`` of a 1-d array, ``broadcast_arrays`` of shapes that do not
broadcast). Where the metadata is not known here yet, such an error comes at the next sync
point, as an array op's does. Also left to it: a count that needs metadata the client does
not have (``x.nonzero()`` of an array whose ``ndim`` is not known yet).

The container, a tuple or a list, is the pool's: CuPy's changed between versions
(``meshgrid`` and ``broadcast_arrays`` gave lists before CuPy 14) and NumPy's differs from
CuPy's (``gradient``, ``atleast_nd``). A session's first call of each name waits for its
structure, which also checks the count told here against the pool's (:func:`learn`); from
its second call on the name is issued without a wait. ``where(c, x,
y)``, ``unique`` with no ``return_*`` flag, ``indices``, ``atleast_nd`` of one array,
``gradient`` on one axis, ``qr(a, mode="r")`` and ``svd(a, compute_uv=False)`` are one
array (``ONE``): issued as any array op, held and replayed as one.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from gpu_backend.protocol import messages as m

__all__ = ["ONE", "predicted", "learn", "known_meta", "known_shape", "meta_unknown", "is_int",
           "hsplit_axis", "vsplit_axis", "dsplit_axis"]

#: the call gives one array: issued as an ``api.ARRAY`` op
ONE = "one"

_INT_TYPES = (int, np.integer)


def is_int(value: Any) -> bool:
    return isinstance(value, _INT_TYPES) and not isinstance(value, (bool, np.bool_))


def _is_array(value: Any) -> bool:
    return type(value).__name__ == "ndarray" and hasattr(value, "_h")


def known_meta(array: Any) -> tuple | None:
    """``(shape, dtype, strides, flags)`` of the client array *array* where the client has
    its metadata now (no round trip), else None (also for anything not such an array)."""
    if not _is_array(array):
        return None
    meta = array._m
    return array._s.meta.peek(array._h) if meta is None else meta


def meta_unknown(value: Any) -> bool:
    """Whether *value* is a client array whose metadata the client does not have now (its
    reply not read yet): a call that would be issued otherwise once it has, undecided."""
    return _is_array(value) and known_meta(value) is None


def known_shape(array: Any) -> tuple | None:
    """The shape of the client array *array* where the client has its metadata now (no
    round trip), else None."""
    meta = known_meta(array)
    return None if meta is None else tuple(meta[0])


def _args_only(args: tuple, kwargs: dict | None, most: int, allowed: frozenset = frozenset()) -> bool:
    return len(args) <= most and not (kwargs and not allowed.issuperset(kwargs))


def _axis_fits(axis: Any, ndim: int) -> bool:
    return is_int(axis) and -ndim <= axis < ndim


# ------------------------------------------------------------------ one rule a function
# Each rule gives the count of arrays (an int), ONE, or None (the waiting path).

def _ufunc_of_two(args: tuple, kwargs: dict | None, nin: int) -> Any:
    """``divmod(x, y)``, ``modf(x)``, ``frexp(x)``: two arrays, none given as ``out``. (A
    host array among the operands is refused at the call before this, as by CuPy:
    ufunc_operands.py.)"""
    if len(args) != nin or (kwargs and "out" in kwargs):
        return None
    return 2


def _split(args: tuple, kwargs: dict | None, axis_of: Callable[[int], int | None] | None,
           equal: bool) -> Any:
    """The ``split`` family: one piece a section, or one more than the indices given.
    Where the array's shape is known here, CuPy's refusals are left to the waiting path
    (an axis it lacks, ``vsplit`` of a 1-d array, an equal split that does not divide)."""
    if len(args) < 2 or not _is_array(args[0]):
        return None
    if axis_of is not None:   # hsplit, vsplit, dsplit: the axis follows from ndim
        if len(args) != 2 or kwargs:
            return None
    elif not _args_only(args, kwargs, 3, frozenset(("axis",))):
        return None
    sections = args[1]
    if isinstance(sections, (list, tuple)):
        if not all(is_int(i) for i in sections):
            return None
        count = len(sections) + 1
    elif is_int(sections) and sections > 0:
        count = int(sections)
    else:
        return None
    shape = known_shape(args[0])
    if shape is not None:
        if axis_of is not None:
            axis = axis_of(len(shape))
        else:
            axis = kwargs["axis"] if kwargs and "axis" in kwargs else (args[2] if len(args) > 2 else 0)
        if axis is None or not _axis_fits(axis, len(shape)):
            return None
        if equal and not isinstance(sections, (list, tuple)) and shape[axis] % count:
            return None
    return count


def hsplit_axis(ndim: int) -> int | None:
    return None if ndim == 0 else (0 if ndim == 1 else 1)


def vsplit_axis(ndim: int) -> int | None:
    return 0 if ndim >= 2 else None


def dsplit_axis(ndim: int) -> int | None:
    return 2 if ndim >= 3 else None


def _meshgrid(args: tuple, kwargs: dict | None) -> Any:
    """One array an argument; CuPy takes only 1-d arrays and 'xy' or 'ij'."""
    if not args or not all(_is_array(a) for a in args) or (
            kwargs and not {"indexing", "sparse", "copy"}.issuperset(kwargs)):
        return None
    if kwargs and kwargs.get("indexing", "xy") not in ("xy", "ij"):
        return None
    shapes = [known_shape(a) for a in args]
    if any(shape is not None and len(shape) != 1 for shape in shapes):
        return None
    return len(args)


def _broadcast_arrays(args: tuple, kwargs: dict | None) -> Any:
    """One array an argument, where the shapes known here broadcast."""
    if not args or kwargs or not all(_is_array(a) for a in args):
        return None
    known = [shape for shape in map(known_shape, args) if shape is not None]
    try:
        np.broadcast_shapes(*known)
    except ValueError:
        return None
    return len(args)


def _atleast(args: tuple, kwargs: dict | None) -> Any:
    if not args or kwargs:
        return None
    return ONE if len(args) == 1 else len(args)


def _nonzero_of(array: Any) -> Any:
    """One index array a dimension; 0-d arrays are left to CuPy's own error."""
    shape = known_shape(array)
    if shape is None or not shape:
        return None
    return len(shape)


def _nonzero(args: tuple, kwargs: dict | None) -> Any:
    if len(args) != 1 or kwargs:
        return None
    return _nonzero_of(args[0])


_UNIQUE_FLAGS = ("return_index", "return_inverse", "return_counts")


def _unique(args: tuple, kwargs: dict | None) -> Any:
    """The unique values, then one array a flag set (given by name, as Python bools)."""
    if len(args) != 1 or not _is_array(args[0]):
        return None
    count = 1
    for key, value in (kwargs or {}).items():
        if key in _UNIQUE_FLAGS:
            if type(value) is not bool:
                return None
            count += value
        elif key == "axis":
            shape = known_shape(args[0])
            if value is not None and shape is not None and not _axis_fits(value, len(shape)):
                return None
        elif key != "equal_nan":
            return None
    return ONE if count == 1 else count


def _histogram(args: tuple, kwargs: dict | None) -> Any:
    if not args or not _is_array(args[0]) or not _args_only(args, kwargs, 5, frozenset(("bins", "range", "weights", "density"))):
        return None
    return 2


def _triangle_indices(args: tuple, kwargs: dict | None) -> Any:
    if not args or not is_int(args[0]) or not _args_only(args, kwargs, 3, frozenset(("k", "m"))):
        return None
    return 2


def _triangle_indices_from(args: tuple, kwargs: dict | None) -> Any:
    if not args or not _args_only(args, kwargs, 2, frozenset(("k",))):
        return None
    shape = known_shape(args[0])
    if shape is None or len(shape) != 2:
        return None
    return 2


def _diag_indices(args: tuple, kwargs: dict | None) -> Any:
    if not args or not is_int(args[0]) or not _args_only(args, kwargs, 2, frozenset(("ndim",))):
        return None
    ndim = kwargs["ndim"] if kwargs and "ndim" in kwargs else (args[1] if len(args) > 1 else 2)
    if not is_int(ndim) or ndim < 1:
        return None
    return int(ndim)


def _unravel_index(args: tuple, kwargs: dict | None) -> Any:
    if len(args) < 2 or not _is_array(args[0]) or not _args_only(args, kwargs, 3, frozenset(("order",))):
        return None
    dims = args[1]
    if not isinstance(dims, (tuple, list)) or not dims or not all(is_int(d) for d in dims):
        return None
    return len(dims)


def _gradient(args: tuple, kwargs: dict | None) -> Any:
    """One derivative an axis: the axes named, or every axis of an array whose ndim is
    known here; one array where that is one axis. Axes the array lacks, or named twice,
    where its ndim is known: the waiting path."""
    if not args or not _is_array(args[0]) or (kwargs and not {"axis", "edge_order"}.issuperset(kwargs)):
        return None
    axis = kwargs.get("axis") if kwargs else None
    shape = known_shape(args[0])
    if axis is None:
        if not shape:
            return None
        count = len(shape)
    else:
        axes = (axis,) if is_int(axis) else axis
        if not isinstance(axes, (tuple, list)) or not axes or not all(is_int(a) for a in axes):
            return None
        if shape is not None and (not all(_axis_fits(a, len(shape)) for a in axes)
                                  or len({a % len(shape) for a in axes}) != len(axes)):
            return None
        count = len(axes)
    return ONE if count == 1 else count


def _matrix_known_bad(array: Any, square: bool) -> bool:
    """Whether *array* is not a client array, or its known shape is one linalg refuses
    (fewer than 2 dimensions; for *square*, the last two unequal)."""
    if not _is_array(array):
        return True
    shape = known_shape(array)
    return shape is not None and (len(shape) < 2 or (square and shape[-1] != shape[-2]))


def _qr(args: tuple, kwargs: dict | None) -> Any:
    """(q, r), (h, tau) raw; r alone for mode 'r'."""
    if not args or not _args_only(args, kwargs, 2, frozenset(("mode",))) or _matrix_known_bad(args[0], False):
        return None
    mode = kwargs["mode"] if kwargs and "mode" in kwargs else (args[1] if len(args) > 1 else "reduced")
    if mode == "r":
        return ONE
    return 2 if mode in ("reduced", "complete", "raw") else None


def _svd(args: tuple, kwargs: dict | None) -> Any:
    """(u, s, vh), or s alone where ``compute_uv`` is False."""
    if not args or not _args_only(args, kwargs, 3, frozenset(("full_matrices", "compute_uv"))) \
            or _matrix_known_bad(args[0], False):
        return None
    compute_uv = kwargs["compute_uv"] if kwargs and "compute_uv" in kwargs else (
        args[2] if len(args) > 2 else True)
    if type(compute_uv) is not bool:
        return None
    return 3 if compute_uv else ONE


def _pair_of_one_matrix(allowed: frozenset) -> Callable[[tuple, dict | None], Any]:
    """``eigh``, ``eig``, ``slogdet``: two arrays of one square matrix (or a stack)."""
    def rule(args: tuple, kwargs: dict | None) -> Any:
        if not args or not _args_only(args, kwargs, 1 + len(allowed), allowed) \
                or _matrix_known_bad(args[0], True):
            return None
        return 2
    return rule


def _indices(args: tuple, kwargs: dict | None) -> Any:
    """CuPy's ``indices`` has no ``sparse``: always one array."""
    if not args or not _args_only(args, kwargs, 2, frozenset(("dtype",))):
        return None
    return ONE


_FUNCTIONS: dict[str, Callable[[tuple, dict | None], Any]] = {
    "divmod": lambda args, kwargs: _ufunc_of_two(args, kwargs, 2),
    "modf": lambda args, kwargs: _ufunc_of_two(args, kwargs, 1),
    "frexp": lambda args, kwargs: _ufunc_of_two(args, kwargs, 1),
    "split": lambda args, kwargs: _split(args, kwargs, None, True),
    "array_split": lambda args, kwargs: _split(args, kwargs, None, False),
    "hsplit": lambda args, kwargs: _split(args, kwargs, hsplit_axis, True),
    "vsplit": lambda args, kwargs: _split(args, kwargs, vsplit_axis, True),
    "dsplit": lambda args, kwargs: _split(args, kwargs, dsplit_axis, True),
    "meshgrid": _meshgrid,
    "broadcast_arrays": _broadcast_arrays,
    "atleast_1d": _atleast,
    "atleast_2d": _atleast,
    "atleast_3d": _atleast,
    "nonzero": _nonzero,
    "where": lambda args, kwargs: ONE if len(args) == 3 and not kwargs else _nonzero(args, kwargs),
    "unique": _unique,
    "histogram": _histogram,
    "tril_indices": _triangle_indices,
    "triu_indices": _triangle_indices,
    "tril_indices_from": _triangle_indices_from,
    "triu_indices_from": _triangle_indices_from,
    "diag_indices": _diag_indices,
    "unravel_index": _unravel_index,
    "indices": _indices,
    "gradient": _gradient,
    "linalg.qr": _qr,
    "linalg.svd": _svd,
    "linalg.eigh": _pair_of_one_matrix(frozenset(("UPLO",))),
    "linalg.eig": _pair_of_one_matrix(frozenset()),
    "linalg.slogdet": _pair_of_one_matrix(frozenset()),
}


def predicted(kind: str, name: Any, target: Any, args: tuple, kwargs: dict | None) -> Any:
    """What the ``MULTI`` call gives, where its arguments alone say: the count of its new
    arrays, or ``ONE`` for one array; None where they do not (the call waits for the
    pool's structure)."""
    if kind == m.KIND_FUNCTION:
        rule = _FUNCTIONS.get(name)
        return rule(args, kwargs) if rule is not None else None
    if kind == m.KIND_METHOD:
        if name == "nonzero" and not args and not kwargs:
            return _nonzero_of(target)
        return None
    if kind == m.KIND_OPERATOR and name == "divmod" and len(args) == 2:
        return 2
    return None


# ------------------------------------------------------------------ the pool's containers
def learn(containers: dict, kind: str, name: Any, count: int, result: Any, array_type: type) -> None:
    """The structure the pool gave a call told to give *count* arrays, kept in *containers*
    (the session's, by ``(kind, name)``): its container where it is *count* arrays in a
    tuple or a list (a subclass, NumPy's named results, as a tuple), else None, and the
    name is never told again in this session. The first answer of a name is kept."""
    key = (kind, name)
    if key in containers:
        return
    if isinstance(result, (tuple, list)) and len(result) == count \
            and all(type(item) is array_type for item in result):
        containers[key] = list if isinstance(result, list) else tuple
    else:
        containers[key] = None
