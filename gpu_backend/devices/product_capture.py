"""Which matrix products a held stretch's graphs capture (worker/graph_replay.py), for both
devices: ``a @ b``, ``matmul(a, b)``, ``dot(a, b)`` and ``a.dot(b)`` of two arrays of one
float or complex dtype, each a matrix or a vector, nothing else given; and ``a @ b`` or
``matmul(a, b)`` of two batches of matrices of one batch shape (no broadcasting).

Why: CuPy refuses every cuBLAS call while a stream captures, so such a product ran eagerly
between a stretch's graphs: 58-69 µs of the worker's Python a call on an H200 host (run 151:
logistic regression, MLP), a graph launch's part of a step. On a GPU the products named here
are made inside the capture by the same cuBLAS call CuPy makes (devices/cupy_products.py);
the NumPy device captures the same ones (its recorded calls). While the worker captures,
both refuse every other product that would reach cuBLAS (:func:`reaches_cublas`: a batch by
a matrix, mixed dtypes, ``out=``), as CuPy does, so that it runs eagerly from the next
capture on, as on a GPU. A user's own capture (CuPy's graph API) is not this: there cuBLAS
is refused as CuPy refuses it (devices/capture_refusals.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import messages as m
from .capture_refusals import library_error

__all__ = ["product_operands", "product_pair", "takes", "reaches_cublas", "PRODUCT_CALLS",
           "stretch_refusal"]

#: the ops that are products of two operands: (kind, name)
PRODUCT_CALLS = frozenset({(m.KIND_OPERATOR, "matmul"), (m.KIND_FUNCTION, "matmul"),
                           (m.KIND_FUNCTION, "dot"), (m.KIND_METHOD, "dot")})


def product_pair(kind: str, target: Any, args: Any) -> tuple | None:
    """A product op's two operands, whatever else it was given (None: not two)."""
    if kind == m.KIND_METHOD:
        return (target, args[0]) if len(args) >= 1 else None
    return (args[0], args[1]) if len(args) >= 2 else None


def product_operands(kind: str, name: str, target: Any, args: Any, kwargs: Any) -> tuple | None:
    """The two operands of a product this module's rule captures through cuBLAS (its doc),
    or None: not such a product, or not one of these."""
    if (kind, name) not in PRODUCT_CALLS:
        return None
    if kwargs and any(v is not None for v in kwargs.values()):   # (out=, dtype=, axes=, ...)
        return None
    if len(args) != (1 if kind == m.KIND_METHOD else 2):
        return None
    pair = product_pair(kind, target, args)
    return pair if takes(name, *pair) else None


def takes(name: str, a: Any, b: Any) -> bool:
    """Whether the rule (the module's doc) takes product *name* of operands *a* and *b*."""
    try:
        a_dim, b_dim, dtype = a.ndim, b.ndim, a.dtype
        if dtype != b.dtype or dtype.kind not in "fc" or dtype.itemsize < 4:
            return False
    except AttributeError:   # (a Python scalar, a list)
        return False
    if 1 <= a_dim <= 2 and 1 <= b_dim <= 2:
        return True
    # a batch of matrices by a batch of matrices, one batch shape (``matmul``'s strided
    # batched GEMM; ``dot`` of more dimensions is another product, left to CuPy)
    return name == "matmul" and a_dim == b_dim and a.shape[:-2] == b.shape[:-2]


def stretch_refusal(kind: str, name: str, target: Any, args: Any, kwargs: Any) -> Exception | None:
    """CuPy's error for a product the worker's capture cannot make (one that reaches cuBLAS
    and that :func:`product_operands` does not take), or None: what the NumPy device raises
    while the worker captures, as a GPU worker's CuPy would."""
    if (kind, name) not in PRODUCT_CALLS or product_operands(kind, name, target, args, kwargs):
        return None
    pair = product_pair(kind, target, args)
    if pair is not None and reaches_cublas(*pair):
        return library_error("cuBLAS")
    return None


def reaches_cublas(a: Any, b: Any) -> bool:
    """Whether CuPy's product of arrays *a* and *b* goes through cuBLAS (``tensordot_core``:
    floats or complex numbers, neither a scalar nor both vectors; devices/capture_refusals.py's
    GEMM rule), on either device's arrays."""
    try:
        if a.ndim == 0 or b.ndim == 0 or (a.ndim == 1 and b.ndim == 1):
            return False
        return np.result_type(a.dtype, b.dtype).kind in "fc"
    except (AttributeError, TypeError):   # (a Python scalar, a list)
        return False
