"""Which results of a held stretch the client's template predicts the metadata of.

A run answered from its template (kernelproxy/template_run.py) hands out each result's
shape, dtype and strides from the template where they follow from the op's arrays'
metadata, its literals and its parameters' types alone: not from the values in its arrays
(a boolean mask's selection, ``nonzero``, ``unique``). These lists and rules say which ops
those are; kernelproxy/stretch_templates.py reads them as it builds a template, and asks
the worker for the metadata of the other results when a run keeps them.
"""

from __future__ import annotations

from typing import Any, Callable

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

__all__ = ["STATIC_METHODS", "STATIC_FUNCTIONS", "STATIC_SEVERAL", "STATIC_DRAWS", "static_result"]


#: Methods whose result's metadata follows from their array's and their literal arguments'.
STATIC_METHODS = frozenset("""
    all any argmax argmin argpartition argsort astype clip conj conjugate copy cumprod cumsum
    diagonal dot flatten max mean min prod ravel reshape round squeeze std sum swapaxes take
    trace transpose var
""".split())
#: Functions so, besides the ufuncs (whose result follows from their operands' metadata).
STATIC_FUNCTIONS = frozenset("""
    array asarray asanyarray ascontiguousarray asfortranarray copy empty empty_like zeros
    zeros_like ones ones_like full full_like arange linspace logspace eye identity tri tril
    triu round around clip nan_to_num real imag conj conjugate angle sinc i0 all any
    sum prod nansum nanprod cumsum cumprod nancumsum nancumprod diff cross mean average
    var std nanmean nanvar nanstd median nanmedian amax amin max min nanmax nanmin ptp argmax
    argmin nanargmax nanargmin count_nonzero sort argsort partition argpartition searchsorted
    reshape ravel transpose swapaxes moveaxis rollaxis squeeze expand_dims broadcast_to
    concatenate stack vstack hstack dstack column_stack tile flip fliplr flipud roll rot90 pad
    take take_along_axis diagonal trace einsum dot vdot inner outer matmul tensordot kron
    append astype matrix_transpose linalg.norm linalg.solve linalg.inv linalg.det
    linalg.matmul linalg.cholesky
    fft.fft fft.ifft fft.rfft fft.irfft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfft2
    fft.irfft2 fft.rfftn fft.irfftn fft.fftshift fft.ifftshift
""".split())


#: Calls of several results (``api.ARRAYS``) whose pieces' metadata follows from their
#: arrays' metadata and their literals, checked against the worker's for each
#: (tests/kernelproxy/test_result_structures.py). Not those whose values decide their
#: pieces' shapes (``nonzero``, ``where`` of one array, ``unique``), nor ``linalg.eig``
#: (its pieces' dtype, real or complex, is its eigenvalues'). ``histogram`` is, but for its
#: bins named by a rule (``bins="auto"``, whose count its values decide: _static_pieces).
STATIC_SEVERAL = frozenset("""
    modf frexp divmod meshgrid broadcast_arrays atleast_1d atleast_2d atleast_3d
    gradient tril_indices triu_indices tril_indices_from triu_indices_from diag_indices
    unravel_index linalg.qr linalg.svd linalg.eigh linalg.slogdet histogram
""".split())


#: A generator's draws (``cupy.random.uniform(size=...)`` is the global RandomState's):
#: their result's shape and dtype follow from their literals (``size``, ``dtype``, a count)
#: and their arrays' metadata (parameters broadcast), never from the numbers drawn.
STATIC_DRAWS = frozenset(f"{cls}.{name}" for cls in ("random.RandomState", "random.Generator")
                         for name, want in api.OBJECTS[cls].items() if want == api.ARRAY)


def static_result(record: tuple, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether the result of the op of key *record* has metadata that follows from its
    arrays' metadata, its literals and its parameters' types alone (not from the values in
    its arrays: a boolean mask's selection, ``nonzero``, ``unique``, ``bincount``, and an
    index of such a result). *metas(role)* gives the metadata of an array role of the
    template (None: unknown, or a result's that is not static)."""
    kind = record[0]
    if record[1] != api.ARRAY:
        if type(record[1]) is tuple and record[1][0] == api.ARRAYS:   # (a piece of several)
            return _static_pieces(record, metas)
        return False
    if not _arrays_known(record[3] if len(record) == 4 else record[3:], metas):
        return False   # (an array whose shape its values decided: a mask's selection's)
    if kind == m.KIND_UPLOAD:   # (its literal shape and dtype: an uploaded array's layout)
        return True
    if kind == m.KIND_OPERATOR:
        if len(record) == 4:   # an arithmetic or comparison operator (its scalars: parameters)
            return True
        if record[2] == ("l", "str", "pow"):   # (its exponent a literal: as an operator's)
            return True
        if record[2] != ("l", "str", "getitem"):
            return False
        return not any(_holds_mask(role, metas) for role in record[4][1:])
    name = record[2][2] if type(record[2]) is tuple and len(record[2]) == 3 else None
    if kind == m.KIND_ATTRIBUTE:
        return True
    if kind == m.KIND_METHOD:
        return name in STATIC_METHODS
    if kind == m.KIND_FUNCTION:
        if name == "where" and len(record[4]) != 3:   # (one argument: nonzero's arrays)
            return False
        return name in api.UFUNCS or name in STATIC_FUNCTIONS
    if kind == m.KIND_OBJECT:
        return name in STATIC_DRAWS
    # a fused function's kernel (its program a fixed literal, its scalars literals too):
    # CuPy's elementwise or reduction kernel, its results' shapes and dtypes its arrays'
    return kind == m.KIND_KERNEL and name == "fuse"


def _static_pieces(record: tuple, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether the pieces of a call of several results (its key *record*, want
    ``(ARRAYS, n)``) have metadata that follows from its arrays' and its literals
    (STATIC_SEVERAL: a function's, or Python's ``divmod``), its arrays' predicted."""
    if len(record) != 6 or not _arrays_known(record[3:], metas):
        return False
    if record[0] == m.KIND_OPERATOR:   # (Python's divmod of operands divmod_pair leaves a call)
        return record[2] == ("l", "str", "divmod")
    name = record[2]
    if record[0] != m.KIND_FUNCTION or type(name) is not tuple or len(name) != 3:
        return False
    if name[2] == "histogram":   # (its count of bins, or its edges' array, given: not a
        return not _bins_by_values(record, metas)   # rule that counts the values)
    return name[2] in STATIC_SEVERAL


def _bins_by_values(record: tuple, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether ``histogram``'s key *record* takes its count of bins from values: a rule
    (``bins="auto"``, ``"fd"``, ...) that counts the data, or a 0-d array of bins (NumPy
    reads its value as the count); an int, an array of edges or the default (10) leave its
    pieces' shapes to its literals and its arrays' metadata."""
    args, kwargs = record[4], dict(record[5])
    bins = args[1] if len(args) > 1 else kwargs.get("bins")
    if type(bins) is not tuple or not bins:
        return False
    if bins[:2] == ("l", "str"):
        return True
    if bins[0] in ("i", "r") and all(type(n) is int for n in bins[1:]):   # (an array)
        meta = metas(bins)
        return meta is None or len(meta[0]) == 0
    return False


def _is_result(role: tuple) -> bool:
    """Whether *role* names a result of the stretch: ``("r", k)``, or the piece
    ``("r", k, p)`` of a call of several results."""
    return role[0] == "r" and len(role) in (2, 3) and all(type(n) is int for n in role[1:])


def _arrays_known(role: Any, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether every result of the stretch in *role* (an op's operands, containers looked
    into) has metadata the template predicts (an input's is checked at each run: an
    object's, None, too). A piece's role, ``("r", k, p)``, is a result's: taken for a
    container, it would count as known, and an op fed by a piece the template does not
    predict would be handed the offered run's metadata."""
    if type(role) is not tuple or not role:
        return True
    if len(role) == 2 and role[0] == "i" and type(role[1]) is int:
        return True
    if _is_result(role):
        return metas(role) is not None
    if role[0] in ("l", "s", "dtype", "type", "np", "...", "fixed"):
        return True
    return all(_arrays_known(r, metas) for r in role)


def _holds_mask(role: Any, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether an index's *role* holds a boolean array (or an array of unknown dtype)."""
    if type(role) is not tuple or not role:
        return False
    tag = role[0]
    if (tag == "i" and len(role) == 2) or (tag == "r" and len(role) in (2, 3)):   # (a piece too)
        meta = metas(role)
        return meta is None or meta[1].kind == "b"
    if tag == "tuple" or tag == "list":
        return any(_holds_mask(r, metas) for r in role[1])
    return False
