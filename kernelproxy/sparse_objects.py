"""``cupyx.scipy.sparse``'s matrices, made and kept in the session's worker.

A CSR, CSC or COO matrix is a :class:`RemoteObject`: the worker builds CuPy's own (SciPy's
on the NumPy device) from the arguments CuPy's constructor takes — a dense array, another
sparse matrix, ``(M, N)``, ``(data, indices, indptr)``, ``(data, (row, col))`` — or from a
SciPy matrix of the client, sent as its arrays. Conversions, ``transpose``, ``copy``,
``astype``, negation and arithmetic with scalars and other sparse matrices give new
matrices in the worker; a product with an array (``A @ x``, ``A.dot(x)``, ``A * x``) or a
sum with one gives a remote array. ``data``, ``indices``, ``indptr``, ``row`` and ``col``
are remote arrays over the matrix's own memory, as CuPy's are; ``get()`` makes the SciPy
matrix on the client from them. The matrix's class is the worker's answer (``A.tocsc()``
is a ``csc_matrix``).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .issue import call as _op
from .remote_object import RemoteObject, remote_attribute
from .state import proxy_cupy

__all__ = ["spmatrix", "csr_matrix", "csc_matrix", "coo_matrix", "dia_matrix", "SPARSE_NAMES",
           "adopt_matrix"]

_FORMATS = {"csr": "Compressed Sparse Row", "csc": "Compressed Sparse Column", "coo": "COOrdinate",
            "dia": "DIAgonal"}


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (numbers.Number, np.generic))


def _host_parts(arg: Any, fmt: str) -> tuple[Any, tuple | None]:
    """A SciPy matrix of the client as the device arrays CuPy's constructor takes (and its
    shape), uploaded: CuPy's own constructor copies a SciPy matrix to the GPU likewise.
    Anything else as given (host arrays in a tuple are refused by CuPy, as locally)."""
    if type(arg).__module__.startswith("scipy.sparse") and hasattr(arg, "tocoo"):
        up = proxy_cupy().asarray
        if fmt == "coo":
            coo = arg.tocoo()
            return (up(coo.data), (up(coo.row), up(coo.col))), coo.shape
        if fmt == "dia":
            dia = arg.todia()
            return (up(dia.data), up(dia.offsets)), dia.shape
        compressed = arg.tocsr() if fmt == "csr" else arg.tocsc()
        return (up(compressed.data), up(compressed.indices), up(compressed.indptr)), compressed.shape
    return arg, None


class spmatrix(RemoteObject):
    """A sparse matrix of the session's worker (CuPy's base class: not made directly)."""

    __array_priority__ = 101.0   # an array operand defers to the matrix, as with CuPy's
    __array_ufunc__ = None       # (a remote array's operators check this)
    format = ""
    ndim = 2
    #: the attributes ``get()`` builds the SciPy matrix from, in its constructor's order
    _parts: tuple = ()
    nnz = remote_attribute("nnz", int)
    data = remote_attribute("data")
    has_canonical_format = remote_attribute("has_canonical_format", bool)

    def __new__(cls, arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False) -> "spmatrix":
        if not cls._remote_class:
            raise ValueError("This class is not intended to be instantiated directly.")
        arg1, host_shape = _host_parts(arg1, cls.format)
        kwargs: dict[str, Any] = {}
        if shape is not None or host_shape is not None:
            kwargs["shape"] = tuple(shape if shape is not None else host_shape)
        if dtype is not None:
            kwargs["dtype"] = np.dtype(dtype)
        if copy:
            kwargs["copy"] = True
        obj = super().__new__(cls)
        kind = obj._create((arg1,), kwargs, wait=True)   # CuPy checks the arguments here
        obj.__class__ = _MATRICES.get(kind, cls)
        return obj

    def _adopt(self, hid: int, kind: str) -> "spmatrix":
        return adopt_matrix(self._s, hid, kind)

    # -- attributes read from the pool
    @property
    def shape(self) -> tuple[int, int]:
        shape = self.__dict__.get("_shape")
        if shape is None:   # (fixed for a matrix's life: no method here reshapes one)
            shape = self._shape = tuple(int(n) for n in self._get("shape"))
        return shape

    @property
    def dtype(self) -> np.dtype:
        dtype = self.__dict__.get("_dtype")
        if dtype is None:
            dtype = self._dtype = np.dtype(self._get("dtype"))
        return dtype

    @property
    def size(self) -> int:
        return self.nnz

    @property
    def T(self) -> "spmatrix":
        return self.transpose()

    def getnnz(self, axis: Any = None) -> int:
        if axis is not None:
            raise NotImplementedError("getnnz over an axis is not forwarded to the GPU pool yet")
        return self.nnz

    def get(self, stream: Any = None) -> Any:
        """The SciPy matrix of the same format on the client (its arrays downloaded)."""
        try:
            import scipy.sparse
        except ImportError:
            raise ImportError("get() of a sparse matrix makes a SciPy matrix: install scipy "
                              "on the client") from None
        data, *rest = (getattr(self, name).get() for name in self._parts)
        arg = (data, tuple(rest)) if self.format == "coo" else (data, *rest)   # (data, (row, col))
        return getattr(scipy.sparse, f"{self.format}_matrix")(arg, shape=self.shape)

    # -- products and sums: a matrix with a scalar or a sparse operand, an array otherwise
    def _either(self, method: str, other: Any, want: str | None = None) -> Any:
        if want is None:
            want = api.OBJECT if isinstance(other, spmatrix) or _is_scalar(other) else api.ARRAY
        name = f"{self._remote_class}.{method}"
        label = f"cupyx.scipy.sparse.{type(self).__name__}.{method}"
        if want == api.OBJECT:
            return self._new_object(name, (other,), {}, label)
        return _op(self._s, m.KIND_OBJECT, name, api.ARRAY, self._h, (other,), {}, label)

    def dot(self, other: Any) -> Any:
        return self._either("dot", other)

    def __matmul__(self, other: Any) -> Any:
        if _is_scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        return self._either("__matmul__", other)

    def __rmatmul__(self, other: Any) -> Any:
        if _is_scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        return self._either("__rmatmul__", other)

    def __mul__(self, other: Any) -> Any:
        return self._either("__mul__", other)

    def __rmul__(self, other: Any) -> Any:
        return self._either("__rmul__", other)

    def __add__(self, other: Any) -> Any:
        return self._either("__add__", other)

    def __radd__(self, other: Any) -> Any:
        return self._either("__radd__", other)

    def __sub__(self, other: Any) -> Any:
        return self._either("__sub__", other)

    def __rsub__(self, other: Any) -> Any:
        return self._either("__rsub__", other)

    def __truediv__(self, other: Any) -> Any:
        return self._either("__truediv__", other)

    # comparisons (CuPy's): with a scalar or a matrix a boolean matrix, with an array an array;
    # like CuPy's matrices these are then unhashable
    def __eq__(self, other: Any) -> Any:
        return self._either("__eq__", other)

    def __ne__(self, other: Any) -> Any:
        return self._either("__ne__", other)

    def __lt__(self, other: Any) -> Any:
        return self._either("__lt__", other)

    def __gt__(self, other: Any) -> Any:
        return self._either("__gt__", other)

    def __le__(self, other: Any) -> Any:
        return self._either("__le__", other)

    def __ge__(self, other: Any) -> Any:
        return self._either("__ge__", other)

    # assignment changes the worker's matrix in place; it waits, so that its warning (a
    # change of the sparsity structure) and its errors come from the line that assigned,
    # inside the caller's warnings filters, as local CuPy's do
    def __setitem__(self, key: Any, x: Any) -> None:
        self._call("__setitem__", key, x)
        self._s.sync()

    def setdiag(self, values: Any, k: int = 0) -> None:
        self._call("setdiag", values, k)
        self._s.sync()

    def _reduced(self, method: str, axis: Any, kwargs: dict) -> Any:
        """``max``/``min``: a 0-d array over the whole matrix, a sparse matrix along an axis."""
        name = f"{self._remote_class}.{method}"
        label = f"cupyx.scipy.sparse.{type(self).__name__}.{method}"
        if axis is not None:
            return self._new_object(name, (), {"axis": axis, **kwargs}, label)
        return _op(self._s, m.KIND_OBJECT, name, api.ARRAY, self._h, (), kwargs, label)

    def max(self, axis: Any = None, out: Any = None, *, explicit: bool = False) -> Any:
        if out is not None:
            raise ValueError("Sparse matrices do not support an 'out' parameter.")
        return self._reduced("max", axis, {"explicit": True} if explicit else {})

    def min(self, axis: Any = None, out: Any = None, *, explicit: bool = False) -> Any:
        if out is not None:
            raise ValueError("Sparse matrices do not support an 'out' parameter.")
        return self._reduced("min", axis, {"explicit": True} if explicit else {})

    def __getitem__(self, key: Any) -> Any:
        """``A[i, j]``: a 0-d array; any other key (a row, a column, slices, index arrays):
        a matrix, as CuPy's."""
        element = (isinstance(key, tuple) and len(key) == 2
                   and all(isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool)
                           for k in key))
        return self._either("__getitem__", key, api.ARRAY if element else api.OBJECT)

    def __pos__(self) -> "spmatrix":
        return self

    def __len__(self) -> int:
        raise TypeError("sparse matrix length is ambiguous; use getnnz() or shape[0]")

    def __iter__(self):
        raise TypeError("iterating over a sparse matrix of the GPU pool is not forwarded; "
                        "use .get() or .toarray()")

    def __repr__(self) -> str:
        return (f"<{_FORMATS.get(self.format, self.format)} sparse matrix of dtype "
                f"'{self.dtype}'\n\twith {self.nnz} stored elements and shape {self.shape}>")

    def __str__(self) -> str:
        try:   # as CuPy's: SciPy's text of the matrix
            return str(self.get())
        except ImportError:
            return repr(self)

    def __reduce__(self):
        raise TypeError("a sparse matrix lives in the GPU pool and cannot be pickled; pickle "
                        "its .get() (a SciPy matrix) instead")


class _Compressed(spmatrix):
    _parts = ("data", "indices", "indptr")
    indices = remote_attribute("indices")
    indptr = remote_attribute("indptr")


class csr_matrix(_Compressed, remote="sparse.csr_matrix"):
    """A compressed sparse row matrix: ``csr_matrix(dense)``, ``csr_matrix((M, N))``,
    ``csr_matrix((data, indices, indptr), shape=...)``, ``csr_matrix((data, (row, col)))``
    or from a SciPy matrix."""

    format = "csr"


class csc_matrix(_Compressed, remote="sparse.csc_matrix"):
    """A compressed sparse column matrix, made as ``csr_matrix`` is."""

    format = "csc"


class coo_matrix(spmatrix, remote="sparse.coo_matrix"):
    """A matrix in coordinate form: ``coo_matrix((data, (row, col)), shape=...)``, from a
    dense array, ``(M, N)`` or another matrix."""

    format = "coo"
    _parts = ("data", "row", "col")
    row = remote_attribute("row")
    col = remote_attribute("col")


class dia_matrix(spmatrix, remote="sparse.dia_matrix"):
    """A matrix stored by diagonals (what ``eye``, ``identity`` and ``diags`` make):
    ``dia_matrix((data, offsets), shape=...)``, from a dense array or another matrix."""

    format = "dia"
    _parts = ("data", "offsets")
    offsets = remote_attribute("offsets")


#: the client's class for each type name the worker answers
_MATRICES: dict[str, type] = {cls.__name__: cls for cls in (csr_matrix, csc_matrix, coo_matrix,
                                                            dia_matrix)}


def adopt_matrix(session: Any, hid: int, kind: str) -> spmatrix:
    """The client matrix for the worker's new matrix *hid*, of the class named *kind*."""
    return _MATRICES.get(kind, spmatrix)._of(session, hid)


def _made(function: str, *args: Any, **kwargs: Any) -> spmatrix:
    """A matrix made in the pool by ``cupyx.scipy.sparse.<function>`` (the worker answers
    the class of what it made); a ``dtype`` keyword travels as a NumPy dtype."""
    if kwargs.get("dtype") is not None:
        kwargs["dtype"] = np.dtype(kwargs["dtype"])
    obj, kind = spmatrix._made_by(f"sparse.{function}", args, kwargs)
    obj.__class__ = _MATRICES.get(kind, spmatrix)
    return obj


def eye(m: int, n: int | None = None, k: int = 0, dtype: Any = "d", format: str | None = None) -> spmatrix:
    """A sparse matrix with ones on the k-th diagonal (DIA unless *format* says)."""
    return _made("eye", m, n, k, np.dtype(dtype), format)


def identity(n: int, dtype: Any = "d", format: str | None = None) -> spmatrix:
    """The n x n identity as a sparse matrix."""
    return _made("identity", n, np.dtype(dtype), format)


def diags(diagonals: Any, offsets: Any = 0, shape: Any = None, format: str | None = None,
          dtype: Any = None) -> spmatrix:
    """A sparse matrix from diagonals."""
    return _made("diags", diagonals, offsets, shape=shape, format=format,
                 dtype=dtype)


def spdiags(data: Any, diags: Any, m: int, n: int, format: str | None = None) -> spmatrix:
    """A sparse matrix from the rows of *data* placed on diagonals *diags*."""
    return _made("spdiags", data, diags, m, n, format=format)


def random(m: int, n: int, density: float = 0.01, format: str = "coo", dtype: Any = None,
           random_state: Any = None, data_rvs: Any = None) -> spmatrix:
    """A random sparse matrix, drawn in the pool (*random_state*: a seed or a RandomState)."""
    if data_rvs is not None:
        raise NotImplementedError("cupyx.scipy.sparse.random(data_rvs=...) would run a "
                                  "function of the client in the GPU pool: not forwarded")
    return _made("random", m, n, density, format=format,
                 dtype=dtype, random_state=random_state)


def rand(m: int, n: int, density: float = 0.01, format: str = "coo", dtype: Any = None,
         random_state: Any = None) -> spmatrix:
    """A random sparse matrix, values uniform in [0, 1)."""
    return _made("rand", m, n, density, format=format,
                 dtype=dtype, random_state=random_state)


def hstack(blocks: Any, format: str | None = None, dtype: Any = None) -> spmatrix:
    """Matrices side by side."""
    return _made("hstack", list(blocks), format=format, dtype=dtype)


def vstack(blocks: Any, format: str | None = None, dtype: Any = None) -> spmatrix:
    """Matrices one above the other."""
    return _made("vstack", list(blocks), format=format, dtype=dtype)


def bmat(blocks: Any, format: str | None = None, dtype: Any = None) -> spmatrix:
    """A matrix from a grid of matrices (None: a block of zeros)."""
    return _made("bmat", [list(row) for row in blocks], format=format,
                 dtype=dtype)


def kron(A: Any, B: Any, format: str | None = None) -> spmatrix:
    """The Kronecker product (COO unless *format* says, as CuPy's)."""
    return _made("kron", A, B, format=format or "coo")


def kronsum(A: Any, B: Any, format: str | None = None) -> spmatrix:
    """The Kronecker sum of two square matrices."""
    return _made("kronsum", A, B, format=format)


def block_diag(mats: Any, format: str | None = None, dtype: Any = None) -> spmatrix:
    """The matrices (or arrays) of *mats* along the diagonal of one matrix (COO unless
    *format* says)."""
    return _made("block_diag", mats, format=format, dtype=dtype)


def tril(A: Any, k: int = 0, format: str | None = None) -> spmatrix:
    """The lower triangle of *A* (a matrix or an array) from diagonal *k* down (COO unless
    *format* says)."""
    return _made("tril", A, k, format)


def triu(A: Any, k: int = 0, format: str | None = None) -> spmatrix:
    """The upper triangle of *A* from diagonal *k* up (COO unless *format* says)."""
    return _made("triu", A, k, format)


def issparse(x: Any) -> bool:
    """Whether *x* is a sparse matrix of the pool (CuPy's ``issparse``)."""
    return isinstance(x, spmatrix)


def _is_format(fmt: str):
    def check(x: Any) -> bool:
        return isinstance(x, spmatrix) and x.format == fmt
    check.__name__ = check.__qualname__ = f"isspmatrix_{fmt}"
    check.__doc__ = f"Whether *x* is a {fmt.upper()} matrix of the pool."
    return check


#: the names ``cupyx.scipy.sparse`` gets from here
SPARSE_NAMES: dict[str, Any] = {
    "spmatrix": spmatrix, "csr_matrix": csr_matrix, "csc_matrix": csc_matrix,
    "coo_matrix": coo_matrix, "dia_matrix": dia_matrix, "issparse": issparse,
    "isspmatrix": issparse,
    **{f"isspmatrix_{fmt}": _is_format(fmt) for fmt in ("csr", "csc", "coo", "dia")},
    **{name: globals()[name] for name in api.SPARSE_FUNCTIONS},
}
