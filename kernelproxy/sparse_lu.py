"""``cupyx.scipy.sparse.linalg``'s LU factorizations, kept in the session's worker.

``splu(A)`` and ``spilu(A)`` make a ``SuperLU`` there — CuPy's own factorizes with SciPy
on the host of the GPU and keeps L and U on the device; on the NumPy device SciPy's is the
stand-in — and ``solve`` runs in the pool, giving a remote array. ``factorized(A)`` is
``splu(A).solve``, as in CuPy. ``shape``, ``nnz``, ``perm_r`` and ``perm_c`` are read
from the worker; ``L`` and ``U`` are sparse matrices kept there (CSR, as CuPy's).
"""

from __future__ import annotations

from typing import Any, Callable

from .remote_object import RemoteObject, remote_attribute
from .sparse_objects import adopt_matrix

__all__ = ["SuperLU", "splu", "spilu", "factorized", "SPARSE_LU_NAMES"]


class SuperLU(RemoteObject, remote="sparse.linalg.SuperLU"):
    """An LU factorization of a sparse square matrix, in the pool (made by :func:`splu`
    or :func:`spilu`); ``solve(rhs, trans='N')`` solves with it there."""

    shape = remote_attribute("shape", tuple)
    nnz = remote_attribute("nnz", int)
    perm_r = remote_attribute("perm_r")
    perm_c = remote_attribute("perm_c")

    @property
    def L(self) -> Any:
        """The lower triangular factor, a ``csr_matrix`` in the pool."""
        return self._factor("L")

    @property
    def U(self) -> Any:
        """The upper triangular factor, a ``csr_matrix`` in the pool."""
        return self._factor("U")

    def _factor(self, which: str) -> Any:
        return self._new_object(f"{self._remote_class}.{which}", (), {},
                                f"cupyx.scipy.sparse.linalg.SuperLU.{which}")

    def _adopt(self, hid: int, kind: str) -> Any:
        return adopt_matrix(self._s, hid, kind)

    def __new__(cls, *args: Any, **kwargs: Any) -> "SuperLU":
        raise TypeError("a SuperLU is made by cupyx.scipy.sparse.linalg.splu or spilu")

    def __repr__(self) -> str:
        return f"<cupyx.scipy.sparse.linalg.SuperLU of a {self.shape} matrix in the GPU pool>"


def splu(A: Any, permc_spec: str | None = None, diag_pivot_thresh: float | None = None,
         relax: int | None = None, panel_size: int | None = None, options: dict | None = None) -> SuperLU:
    """The LU factorization of the square sparse matrix *A* (SciPy's SuperLU, in the pool)."""
    return SuperLU._made_by("sparse.linalg.splu", (A,), dict(
        permc_spec=permc_spec, diag_pivot_thresh=diag_pivot_thresh, relax=relax,
        panel_size=panel_size, options=options))[0]


def spilu(A: Any, drop_tol: float | None = None, fill_factor: float | None = None,
          drop_rule: str | None = None, permc_spec: str | None = None,
          diag_pivot_thresh: float | None = None, relax: int | None = None,
          panel_size: int | None = None, options: dict | None = None) -> SuperLU:
    """An incomplete LU factorization of *A* (CuPy's is cuSPARSE's ILU0 on a GPU)."""
    return SuperLU._made_by("sparse.linalg.spilu", (A,), dict(
        drop_tol=drop_tol, fill_factor=fill_factor, drop_rule=drop_rule, permc_spec=permc_spec,
        diag_pivot_thresh=diag_pivot_thresh, relax=relax, panel_size=panel_size, options=options))[0]


def factorized(A: Any) -> Callable[..., Any]:
    """A function solving ``A x = b`` with *A* factorized once (``splu(A).solve``)."""
    return splu(A).solve


SPARSE_LU_NAMES: dict[str, Any] = {"SuperLU": SuperLU, "splu": splu, "spilu": spilu,
                                   "factorized": factorized}
