"""What CuPy refuses while a stream captures, as one table: the NumPy device's emulation of
CuPy's graph API (devices/host_capture.py) raises these errors at the op that would raise
them in CuPy. A GPU worker never reads this module: there CuPy raises them itself.

Derived from CuPy 14's source (github.com/cupy/cupy):

* **libraries**: ``cupy_backends/cuda/libs/{cublas,curand,cusolver,cusparse}.pyx``'s
  ``setStream`` raises ``NotImplementedError('calling <library> API during stream capture
  is currently unsupported')`` when the stream is capturing; each library call sets the
  handle's stream first. Which functions reach which library:
  ``cupy/_core/_routines_linalg.pyx`` (``tensordot_core``, ``matmul``: cuBLAS's GEMMs for
  float and complex types; integers take CuPy's own kernel, and a product of two vectors,
  ``m == n == 1``, is an element-wise multiply and sum), ``cupy/linalg/_product.py``
  (``outer`` and ``kron`` are element-wise; ``matrix_power`` multiplies, or inverts for
  a negative power), ``cupy/linalg/`` and ``cupyx/scipy/linalg/`` (cuSOLVER, and cuBLAS's
  ``trsm`` for ``solve_triangular``), ``cupy/random/_generator.py`` (a ``RandomState``'s
  draws through cuRAND's host API: ``_random_sample_raw``, ``_generate_normal``,
  ``_curand_generate``, ``_permutation`` and what calls them), ``cupyx/scipy/sparse/``
  (products, sums and format conversions through cuSPARSE).
* **host reads**: ``cupy/cuda/memory.pyx``'s ``copy_to_host_async`` raises
  ``RuntimeError('the current stream is capturing, so D2H transfers are disallowed')``;
  every read of device data on the host goes through it (``get``, ``item``, ``tolist``,
  ``float(x)``, ``bool(x)``, ``repr(x)``: ``cupy/_core/core.pyx``), and so does every
  function that reads a count or a flag to size or check its result (CuPy's own
  "synchronize!" marks: ``nonzero``, ``where`` of one argument, boolean-mask indexing and
  assignment in ``cupy/_core/_routines_indexing.pyx``; ``unique``, ``bincount``,
  ``histogram``, ``repeat`` by an array, ``nanmax`` and the others below). The message
  names no library, and the capture stays valid (the check comes before the transfer).

The table is CuPy's as far as the names and arguments an op carries show it: a library that
CuPy reaches only for some shapes or dtypes is refused by the same rule here (the GEMM rule
above); the remaining cases a GPU decides (a ``cupyx.scipy`` function that reads a count
deep inside) are not listed, and run as recorded calls on the NumPy device.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..protocol import api

__all__ = ["library_error", "host_read_error", "upload_error", "op_refusal", "object_refusal",
           "LIBRARIES"]

Rule = Callable[[tuple, dict], "Exception | None"]


def library_error(library: str) -> NotImplementedError:
    """CuPy's error for a library call made while the stream captures."""
    return NotImplementedError(f"calling {library} API during stream capture is currently "
                               "unsupported")


def host_read_error() -> RuntimeError:
    """CuPy's error for reading device data on the host while the stream captures."""
    return RuntimeError("the current stream is capturing, so D2H transfers are disallowed")


def upload_error() -> RuntimeError:
    """CuPy's error for copying host data to the device while the stream captures."""
    return RuntimeError("the current stream is capturing, so H2D transfers are disallowed")


def not_emulated(name: str) -> NotImplementedError:
    """An object's method the NumPy device cannot record (a GPU pool captures it as CuPy
    does): refused rather than run once and never again at a launch."""
    return NotImplementedError(
        f"{name} while a stream captures is not emulated on the NumPy device (a GPU pool "
        "captures it as CuPy does)")


# ---------------------------------------------------------------- rules of arguments

def _arrays(values: Any) -> list:
    return [v for v in values if isinstance(v, np.ndarray)]


def _gemm(a: Any, b: Any) -> bool:
    """Whether CuPy's ``tensordot_core`` takes cuBLAS for operands *a* and *b*: a product
    of floats or complex numbers that is not a scalar's nor one of two vectors."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False   # (a Python scalar: an element-wise multiply)
    if a.ndim == 0 or b.ndim == 0 or (a.ndim == 1 and b.ndim == 1):
        return False
    return np.result_type(a.dtype, b.dtype).kind in "fc"


def _product(args: tuple, kwargs: dict) -> Exception | None:
    if len(args) >= 2 and _gemm(args[0], args[1]):
        return library_error("cuBLAS")
    return None


def _einsum(args: tuple, kwargs: dict) -> Exception | None:
    """A contraction of two operands or more, one a matrix at least, goes through
    ``tensordot_core`` (``cupy/linalg/_einsum.py``)."""
    operands = _arrays(args)
    if len(operands) >= 2 and any(o.ndim >= 2 for o in operands) \
            and np.result_type(*operands).kind in "fc":
        return library_error("cuBLAS")
    return None


def _matrix_power(args: tuple, kwargs: dict) -> Exception | None:
    n = args[1] if len(args) > 1 else kwargs.get("n")
    if type(n) is int and n < 0:
        return library_error("cuSOLVER")   # inv(M) first
    if type(n) is int and n >= 2:
        return library_error("cuBLAS")
    return None


def _norm(args: tuple, kwargs: dict) -> Exception | None:
    """A matrix's 2-norm and nuclear norm take its singular values (cuSOLVER); the others
    are reductions."""
    x = args[0] if args else None
    ord_ = args[1] if len(args) > 1 else kwargs.get("ord")
    axis = args[2] if len(args) > 2 else kwargs.get("axis")
    matrix = (isinstance(axis, tuple) and len(axis) == 2) or (
        axis is None and isinstance(x, np.ndarray) and x.ndim == 2)
    if matrix and ord_ in (2, -2, "nuc"):
        return library_error("cuSOLVER")
    return None


def _always(library: str) -> Rule:
    def rule(args: tuple, kwargs: dict) -> Exception:
        return library_error(library) if library else host_read_error()
    return rule


_READS: Rule = _always("")


def _where(args: tuple, kwargs: dict) -> Exception | None:
    """``where(condition)`` alone is ``nonzero``; with x and y it is element-wise."""
    return host_read_error() if len(args) + len(kwargs) == 1 else None


def _array_arg(position: int, keyword: str) -> Rule:
    """Reads the device when the argument is an array (``repeat``'s repeats, ``delete``'s
    indices, ``average``'s weights, ``percentile``'s q, ``gradient``'s spacings)."""
    def rule(args: tuple, kwargs: dict) -> Exception | None:
        value = args[position] if len(args) > position else kwargs.get(keyword)
        if isinstance(value, np.ndarray) and value.ndim > 0:
            return host_read_error()
        if isinstance(value, (list, tuple)) and _arrays(value):
            return host_read_error()
        return None
    return rule


def _mask(index: Any) -> bool:
    if isinstance(index, np.ndarray):
        return index.dtype == np.bool_
    if isinstance(index, tuple):
        return any(isinstance(i, np.ndarray) and i.dtype == np.bool_ for i in index)
    return False


def _masked(args: tuple, kwargs: dict) -> Exception | None:
    """Indexing or assigning by a boolean mask counts its true entries first."""
    return host_read_error() if len(args) > 1 and _mask(args[1]) else None


def _nan_extremum(args: tuple, kwargs: dict) -> Exception | None:
    """``nanmax``/``nanmin`` of floats look for an all-NaN slice to warn of."""
    x = args[0] if args else None
    return host_read_error() if isinstance(x, np.ndarray) and x.dtype.kind in "fc" else None


_CUSOLVER = _always("cuSOLVER")

#: Functions (api.FUNCTIONS names) and the rule that refuses them while capturing.
FUNCTION_RULES: dict[str, Rule] = {
    # cuBLAS
    **{name: _product for name in ("matmul", "dot", "inner", "tensordot", "linalg.matmul")},
    "einsum": _einsum,
    "linalg.matrix_power": _matrix_power,
    "cupyx.scipy.linalg.solve_triangular": _always("cuBLAS"),
    "cupyx.scipy.linalg.expm": _always("cuBLAS"),
    # cuSOLVER
    **{f"linalg.{name}": _CUSOLVER for name in (
        "det inv pinv solve cholesky matrix_rank eigvalsh eigvals eigh eig svd qr slogdet "
        "lstsq tensorsolve tensorinv cond").split()},
    "linalg.norm": _norm,
    **{f"cupyx.scipy.linalg.{name}": _CUSOLVER for name in ("lu", "lu_factor", "lu_solve")},
    "polyfit": _CUSOLVER, "roots": _CUSOLVER,
    # cuSPARSE (the solvers' products)
    **{f"cupyx.scipy.sparse.linalg.{name}": _always("cuSPARSE") for name in (
        "spsolve spsolve_triangular cg cgs gmres minres lsqr lsmr eigsh svds").split()},
    # reads of the device's data on the host
    **{name: _READS for name in (
        "nonzero flatnonzero argwhere extract compress place unique unique_all unique_counts "
        "unique_inverse unique_values intersect1d setdiff1d union1d setxor1d bincount "
        "histogram histogram2d histogramdd trim_zeros asarray_chkfinite real_if_close "
        "unravel_index ravel_multi_index array2string array_repr array_str "
        "cupyx.scipy.sparse.find").split()},
    "where": _where,
    "nanmax": _nan_extremum, "nanmin": _nan_extremum,
    "repeat": _array_arg(1, "repeats"),
    "delete": _array_arg(1, "obj"),
    "average": _array_arg(2, "weights"),
    "percentile": _array_arg(1, "q"), "quantile": _array_arg(1, "q"),
    "nanpercentile": _array_arg(1, "q"), "nanquantile": _array_arg(1, "q"),
    "gradient": lambda args, kwargs: host_read_error() if _arrays(args[1:]) else None,
    "ix_": lambda args, kwargs: host_read_error() if any(
        isinstance(a, np.ndarray) and a.dtype == np.bool_ for a in args) else None,
}

#: ndarray methods (api.METHODS names), called with the array first.
METHOD_RULES: dict[str, Rule] = {
    "dot": _product,
    **{name: _READS for name in ("item", "tolist", "nonzero")},
    "compress": _READS,
    "repeat": _array_arg(1, "repeats"),
}

#: Operators (api.OPERATORS names).
OPERATOR_RULES: dict[str, Rule] = {
    "matmul": _product, "imatmul": _product,
    **{name: _READS for name in ("float", "int", "bool", "complex", "index", "repr", "str",
                                 "format")},
    "getitem": _masked, "setitem": _masked,
}

_RULES = {"f": FUNCTION_RULES, "m": METHOD_RULES, "o": OPERATOR_RULES}


def op_refusal(kind: str, name: str) -> Rule | None:
    """The rule for the device's function (``"f"``), method (``"m"``) or operator (``"o"``)
    *name*, or None: it is captured as it is."""
    return _RULES[kind].get(name)


#: A RandomState's draws that reach cuRAND's host API (the others run CuPy's own kernels).
CURAND_DRAWS = frozenset("""
    rand randn random_sample randint _interval tomaxint choice permutation shuffle uniform
    normal lognormal standard_normal standard_exponential exponential standard_cauchy laplace
    pareto power rayleigh triangular wald weibull gumbel multivariate_normal
""".split())
#: A sparse matrix's products, sums and format conversions (cuSPARSE).
CUSPARSE_METHODS = frozenset("""
    dot __matmul__ __rmatmul__ __mul__ __rmul__ __add__ __radd__ __sub__ __rsub__ multiply
    tocsr tocsc tocoo toarray todense asformat sum_duplicates sort_indices sorted_indices
    eliminate_zeros
""".split())
#: Object calls that touch no device data: allowed while capturing (a transpose is the same
#: arrays seen as the other format; a plan entered or left, a seed set, are host state).
HOST_ONLY = frozenset({"cufft.Plan.__enter__", "cufft.Plan.__exit__", "random.RandomState.seed"}
                      | {f"sparse.{kind}.transpose" for kind in api.SPARSE_CLASSES})

#: The libraries named (for the docs and tests).
LIBRARIES = ("cuBLAS", "cuRAND", "cuSOLVER", "cuSPARSE")


def object_refusal(name: str, args: list) -> Exception | None:
    """The error for calling the remote object's method *name* (``random.RandomState.rand``)
    while capturing on the NumPy device, or None: allowed. Methods the NumPy device cannot
    record (a ``Generator``'s draws, which a GPU captures) are refused as not emulated."""
    cls, _, member = name.rpartition(".")
    if cls not in api.OBJECTS or name in HOST_ONLY:
        return None
    if cls == "random.RandomState" and member in CURAND_DRAWS:
        return library_error("cuRAND")
    if cls.startswith("sparse.") and member in CUSPARSE_METHODS and not (
            args and type(args[0]) in (int, float, complex, bool)):
        return library_error("cuSPARSE")
    return not_emulated(f"cupy's {name}")
