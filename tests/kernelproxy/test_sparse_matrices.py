"""``cupyx.scipy.sparse`` CSR, CSC and COO matrices as objects of the session's worker
(issue 9): construction in CuPy's forms, conversions, attributes, products and sums with
arrays, scalars and other matrices, ``get()``, and bad input refused with the session
going on. Each result is checked against SciPy's own on the same data (on a GPU pool the
worker's matrices are CuPy's; on the NumPy device, SciPy's)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import NotAllowedError
from kernelproxy.modules import build_modules

scipy_sparse = pytest.importorskip("scipy.sparse")

DENSE = np.array([[1.0, 0, 2, 0], [0, 0, 3, 0], [4, 5, 0, 6]])


@pytest.fixture
def sparse(cp):
    return build_modules()["cupyx.scipy.sparse"]


def _same(remote, host):
    """A remote matrix or array against SciPy's or NumPy's result."""
    if hasattr(host, "toarray"):
        assert remote.format == host.format and remote.shape == host.shape
        np.testing.assert_allclose(remote.toarray().get(), host.toarray())
        np.testing.assert_allclose(remote.get().toarray(), host.toarray())
    else:
        np.testing.assert_allclose(remote.get(), np.asarray(host))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_construction_in_cupys_forms(cp, sparse, fmt):
    make, ref = getattr(sparse, f"{fmt}_matrix"), getattr(scipy_sparse, f"{fmt}_matrix")
    host = ref(DENSE)
    a = make(cp.asarray(DENSE))
    assert type(a).__name__ == f"{fmt}_matrix" and a.format == fmt
    assert a.shape == (3, 4) and a.nnz == 6 and a.dtype == np.float64 and a.ndim == 2
    _same(a, host)
    _same(make(host), host)                          # a SciPy matrix of the client
    _same(make(a), host)                             # another matrix of the pool
    _same(make((2, 5)), ref((2, 5)))                 # an empty one of a shape
    coo = scipy_sparse.coo_matrix(DENSE)
    parts = (cp.asarray(coo.data), (cp.asarray(coo.row), cp.asarray(coo.col)))
    _same(make(parts, shape=(3, 4)), ref((coo.data, (coo.row, coo.col)), shape=(3, 4)))
    assert make(cp.asarray(DENSE), dtype=np.float32).dtype == np.float32
    assert sparse.issparse(a) and sparse.isspmatrix(a)
    assert getattr(sparse, f"isspmatrix_{fmt}")(a) and not sparse.isspmatrix_dia(a)
    assert not sparse.issparse(cp.asarray(DENSE))


def test_compressed_arrays_are_the_matrixs_own(cp, sparse):
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix((cp.asarray(host.data), cp.asarray(host.indices),
                           cp.asarray(host.indptr)), shape=host.shape)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(a, name).get(), getattr(host, name))
    a.data[...] = 7          # a view of the matrix's data, as in CuPy
    np.testing.assert_array_equal(a.toarray().get(), (DENSE != 0) * 7.0)
    coo = sparse.coo_matrix(cp.asarray(DENSE))
    np.testing.assert_array_equal(coo.row.get(), scipy_sparse.coo_matrix(DENSE).row)
    assert repr(a) == ("<Compressed Sparse Row sparse matrix of dtype 'float64'\n"
                       "\twith 6 stored elements and shape (3, 4)>")   # CuPy's words
    assert str(a) == str(a.get())


def test_conversions_transpose_and_copies(cp, sparse):
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    for method in ("tocsr", "tocsc", "tocoo", "copy", "transpose"):
        _same(getattr(a, method)(), getattr(host, method)())
    _same(a.T, host.T)
    _same(a.astype(np.float32), host.astype(np.float32))
    _same(-a, -host)
    _same(a.tocoo().tocsc(), host.tocsc())


def test_products_and_sums(cp, sparse):
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    x, xs = np.arange(4.0), np.arange(12.0).reshape(4, 3)
    y = np.ones((2, 3))
    _same(a @ cp.asarray(x), host @ x)             # matrix times array: an array
    _same(a.dot(cp.asarray(xs)), host.dot(xs))
    _same(a * cp.asarray(x), host @ x)              # a matrix's * is a product, as SciPy's
    _same(cp.asarray(y) @ a, y @ host)              # an array on the left defers to the matrix
    b = a.T
    _same(a @ b, host @ host.T)                     # two matrices: a matrix
    _same(a * 2.5, host * 2.5)
    _same(2 * a, 2 * host)
    _same(a / 2, host / 2)
    _same(a + a, host + host)
    _same(a - a.tocsc(), host - host.tocsc())
    _same(a + cp.asarray(DENSE), np.asarray(host + DENSE))   # with an array: an array
    with pytest.raises(ValueError, match="Scalar operands"):
        a @ 2


def test_reductions_and_element_wise_functions(cp, sparse):
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    for axis in (None, 0, 1):
        _same(a.sum(axis=axis), np.asarray(host.sum(axis=axis)))
        _same(a.mean(axis=axis), np.asarray(host.mean(axis=axis)))
    _same(a.max(), host.max())                     # the whole matrix: a 0-d array
    _same(a.min(), host.min())
    _same(a.max(axis=0), host.max(axis=0))         # along an axis: a sparse matrix
    _same(a.min(axis=1), host.min(axis=1))
    _same(a.diagonal(), host.diagonal())
    assert float(a.trace()) == host.trace() and a.count_nonzero() == host.count_nonzero()
    for name in ("sqrt", "sin", "expm1", "floor", "sign", "rad2deg"):
        _same(getattr(a, name)(), getattr(host, name)())
    _same(a.power(2), host.power(2))
    _same(abs(-a), abs(-host))
    _same(a.conj(), host.conj())
    _same(a.getrow(2), host.getrow(2))
    _same(a.getcol(1), host.getcol(1))
    _same(a.asformat("coo"), host.asformat("coo"))
    messy = sparse.coo_matrix((cp.asarray([1.0, 0.0, 2.0]), (cp.asarray([0, 0, 1]),
                                                              cp.asarray([1, 1, 0]))), shape=(2, 2)).tocsr()
    messy.sum_duplicates()
    messy.eliminate_zeros()
    messy.sort_indices()
    assert messy.nnz == 2 and messy.has_canonical_format
    np.testing.assert_array_equal(messy.toarray().get(), [[0.0, 1.0], [2.0, 0.0]])


def test_indexing_and_element_wise_products(cp, sparse):
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    assert float(a[2, 1]) == host[2, 1] == 5.0 and float(a[0, 1]) == 0.0   # an element: 0-d
    _same(a[1], host[1])                                                 # a row: a matrix
    _same(a[:, 2], host[:, 2])
    _same(a[0:2, 1:3], host[0:2, 1:3])
    np.testing.assert_allclose(a[[0, 2]].toarray().get(), host[[0, 2]].toarray())
    for other, host_other in ((2.0, 2.0), (a, host), (cp.asarray(DENSE), DENSE)):
        product = a.multiply(other)
        assert sparse.issparse(product)                                  # a matrix, as CuPy's
        np.testing.assert_allclose(product.toarray().get(), host.multiply(host_other).toarray())


def test_comparisons_argmax_and_the_triangles(cp, sparse):
    """Comparisons give a boolean matrix (a scalar or matrix operand) or an array (a dense
    one); argmax/argmin count the implicit zeros; tril/triu/find as SciPy's."""
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    b = sparse.csr_matrix(cp.asarray(DENSE.T @ DENSE)[:3])
    for op in ("__gt__", "__lt__", "__ne__", "__ge__", "__le__", "__eq__"):
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy_sparse.SparseEfficiencyWarning)
            _same(getattr(a, op)(2.0), getattr(host, op)(2.0))
    # the pool's warning is SciPy's class, as local CuPy's is (a filter on it catches it)
    with pytest.warns(scipy_sparse.SparseEfficiencyWarning, match="inefficient"):
        a < 2.0
    assert sparse.SparseEfficiencyWarning is scipy_sparse.SparseEfficiencyWarning
    assert issubclass(sparse.SparseEfficiencyWarning, sparse.SparseWarning)
    _same(a != b, host != scipy_sparse.csr_matrix(DENSE.T @ DENSE)[:3])
    dense = cp.asarray(DENSE)
    np.testing.assert_array_equal((a < dense + 1).get(), np.asarray(host < DENSE + 1))
    coo = sparse.coo_matrix(cp.asarray(DENSE))
    _same(coo > 1, scipy_sparse.coo_matrix(DENSE) > 1)        # any format compares as CSR
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    assert int(a.argmax()) == int(host.argmax()) == 11
    assert int(a.argmin()) == int(host.argmin())
    np.testing.assert_array_equal(a.argmax(axis=1).get(), np.asarray(host.argmax(axis=1)))
    np.testing.assert_array_equal(a.argmin(axis=0).get(), np.asarray(host.argmin(axis=0)))
    assert int(sparse.csr_matrix((2, 3)).argmax()) == 0      # an empty matrix: the int 0
    _same(sparse.tril(a), scipy_sparse.tril(host))
    _same(sparse.triu(a, 1, format="csr"), scipy_sparse.triu(host, 1, format="csr"))
    _same(sparse.tril(dense, -1), scipy_sparse.tril(DENSE, -1))   # from an array too
    for got, want in zip(sparse.find(a), scipy_sparse.find(host)):
        np.testing.assert_array_equal(got.get(), want)
    _same(sparse.block_diag([a, sparse.eye(2)]), scipy_sparse.block_diag([host, scipy_sparse.eye(2)]))
    _same(sparse.block_diag((a, b), format="csr"),
          scipy_sparse.block_diag((host, scipy_sparse.csr_matrix(DENSE.T @ DENSE)[:3]), format="csr"))


def test_assignment_into_a_matrix(cp, sparse):
    """``A[i, j] = x`` and ``setdiag`` change the worker's matrix in place, as CuPy's."""
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy_sparse.SparseEfficiencyWarning)
        a[0, 1] = 7.0
        host[0, 1] = 7.0
        a[2, 3] = 0.5                                   # a stored entry
        host[2, 3] = 0.5
        a.setdiag(9.0)
        host.setdiag(9.0)
        a.setdiag(cp.asarray([1.0, 2.0]), k=1)
        host.setdiag([1.0, 2.0], k=1)
    _same(a, host)
    assert a.nnz == host.nnz
    with pytest.raises(IndexError):
        a[5, 0] = 1.0                                   # out of bounds: raised by this line
    with pytest.warns(scipy_sparse.SparseEfficiencyWarning):
        a[1, 0] = 3.0                                   # ... and its warning
    assert float(a[1, 0]) == 3.0


def test_the_modules_functions_make_matrices(cp, sparse):
    def dense_same(remote, host):
        assert sparse.issparse(remote)
        np.testing.assert_allclose(remote.toarray().get(), host.toarray())

    _same(sparse.eye(4, 5, k=1), scipy_sparse.eye(4, 5, k=1))              # DIA, as both make
    _same(sparse.dia_matrix(scipy_sparse.eye(4, 5, k=1)), scipy_sparse.eye(4, 5, k=1))
    _same(sparse.identity(3, format="csr"), scipy_sparse.identity(3, format="csr"))
    d = sparse.diags([cp.asarray([1.0, 2, 3]), cp.asarray([4.0, 5])], [0, 1])
    assert d.format == "dia" and sparse.isspmatrix_dia(d)
    dense_same(d, scipy_sparse.diags([[1.0, 2, 3], [4.0, 5]], [0, 1]))
    np.testing.assert_array_equal(d.offsets.get(), [0, 1])
    np.testing.assert_allclose(d.get().toarray(), d.toarray().get())
    dense_same(sparse.spdiags(cp.asarray([[1.0, 2, 3]]), cp.asarray([0]), 3, 3),
               scipy_sparse.spdiags([[1.0, 2, 3]], [0], 3, 3))
    host = scipy_sparse.csr_matrix(DENSE)
    a = sparse.csr_matrix(cp.asarray(DENSE))
    dense_same(sparse.hstack([a, a], format="csr"), scipy_sparse.hstack([host, host], format="csr"))
    dense_same(sparse.vstack([a, a.tocoo()], format="csc"), scipy_sparse.vstack([host, host], format="csc"))
    dense_same(sparse.bmat([[a, None], [None, a]], format="csr"),
               scipy_sparse.bmat([[host, None], [None, host]], format="csr"))
    k = sparse.kron(a, sparse.identity(2))
    assert k.format == "coo"                                                 # CuPy's default
    dense_same(k, scipy_sparse.kron(host, scipy_sparse.identity(2)))
    sq = sparse.csr_matrix(cp.asarray(DENSE[:, :3]))
    dense_same(sparse.kronsum(sq, sq), scipy_sparse.kronsum(scipy_sparse.csr_matrix(DENSE[:, :3]),
                                                            scipy_sparse.csr_matrix(DENSE[:, :3])))
    r = sparse.random(50, 40, density=0.1, random_state=3)
    assert r.format == "coo" and r.shape == (50, 40) and r.nnz == 200
    assert 0 <= float(r.toarray().min()) and float(r.toarray().max()) < 1
    assert sparse.rand(5, 5, density=0.2, format="csr").format == "csr"
    with pytest.raises(NotImplementedError, match="data_rvs"):
        sparse.random(3, 3, data_rvs=np.ones)
    with pytest.raises(MemoryError):
        sparse.eye(10 ** 11)                                                 # past the session's memory
    with pytest.raises(MemoryError):
        sparse.random(10 ** 6, 10 ** 6, density=0.5)


def test_sparse_linalg_solves_in_the_pool(cp, sparse):
    scipy_linalg = pytest.importorskip("scipy.sparse.linalg")
    n = 40
    host = scipy_sparse.diags([np.full(n - 1, -1.0), np.full(n, 4.0), np.full(n - 1, -1.0)],
                              [-1, 0, 1], format="csr")
    a, b = sparse.csr_matrix(host), cp.arange(n, dtype=np.float64)
    linalg = sparse.linalg
    np.testing.assert_allclose(linalg.spsolve(a, b).get(), scipy_linalg.spsolve(host, np.arange(n, dtype=float)))
    for solver in ("cg", "cgs", "gmres", "minres"):
        x, info = getattr(linalg, solver)(a, b)
        assert info == 0, solver
        residual = np.linalg.norm(host @ x.get() - np.arange(n)) / np.linalg.norm(np.arange(n))
        assert residual < 1e-3, (solver, residual)   # (each solver stops at its own default tolerance)
    x = linalg.lsqr(a, b)[0]
    assert np.linalg.norm(host @ x.get() - np.arange(n)) / np.linalg.norm(np.arange(n)) < 1e-4
    assert float(linalg.norm(a)) == pytest.approx(scipy_linalg.norm(host))
    w = linalg.eigsh(a, k=2, return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w.get()), np.sort(scipy_linalg.eigsh(host, k=2,
                                                                            return_eigenvectors=False)))
    with pytest.raises(TypeError, match="function"):
        linalg.cg(a, b, callback=lambda xk: None)   # a client's function stays on the client
    assert float(cp.arange(4).sum()) == 6


def test_lu_factorizations_solve_in_the_pool(cp, sparse):
    """splu/spilu make a SuperLU in the worker; solve gives a remote array; factorized is
    splu's solve."""
    from scipy.sparse import linalg as scipy_linalg
    linalg = build_modules()["cupyx.scipy.sparse.linalg"]
    dense = np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]])
    b = np.array([1.0, 2, 3])
    a = sparse.csc_matrix(cp.asarray(dense))
    lu = linalg.splu(a)
    assert type(lu).__name__ == "SuperLU" and lu.shape == (3, 3) and lu.nnz > 0
    np.testing.assert_allclose(lu.solve(cp.asarray(b)).get(), np.linalg.solve(dense, b))
    np.testing.assert_allclose(lu.solve(cp.asarray(b), trans="T").get(), np.linalg.solve(dense.T, b))
    host = scipy_linalg.splu(scipy_sparse.csc_matrix(dense))
    np.testing.assert_array_equal(lu.perm_r.get(), host.perm_r)
    # the factors: CSR matrices in the pool, as CuPy's (SciPy's are CSC), with P_r A P_c = L U
    L, U = lu.L, lu.U
    assert type(L).__name__ == type(U).__name__ == "csr_matrix"
    np.testing.assert_allclose(L.toarray().get(), host.L.toarray())
    np.testing.assert_allclose(U.toarray().get(), host.U.toarray())
    pr = np.zeros((3, 3))
    pr[host.perm_r, np.arange(3)] = 1
    pc = np.zeros((3, 3))
    pc[np.arange(3), host.perm_c] = 1
    np.testing.assert_allclose(pr.T @ L.get().toarray() @ U.get().toarray() @ pc.T, dense,
                               atol=1e-12)
    solve = linalg.factorized(a)
    np.testing.assert_allclose(solve(cp.asarray(b)).get(), np.linalg.solve(dense, b))
    ilu = linalg.spilu(sparse.csc_matrix(cp.asarray(dense)))
    assert ilu.solve(cp.asarray(b)).shape == (3,)
    with pytest.raises(TypeError, match="made by"):
        linalg.SuperLU()
    with pytest.raises((ValueError, RuntimeError)):
        linalg.splu(sparse.csc_matrix(cp.asarray(DENSE)))   # not square: the factorization's error


def test_bad_input_is_refused_and_the_session_goes_on(cp, sparse, session):
    a = sparse.csr_matrix(cp.asarray(DENSE))
    with pytest.raises(ValueError):
        a @ cp.ones(7)                               # mismatched dimensions, in the pool
        session.sync()
    # (SciPy checks the pointer's size first, CuPy its first entry: each device's own words)
    with pytest.raises(ValueError, match="index pointer (size|should start with 0)"):
        sparse.csr_matrix((cp.ones(2), cp.ones(2, dtype=np.int32), cp.ones(9, dtype=np.int32)),
                          shape=(2, 2))             # inconsistent arrays: the constructor's error
    with pytest.raises(MemoryError):
        sparse.csr_matrix((10 ** 12, 4))             # index arrays past the session's memory
    with pytest.raises(TypeError, match="ambiguous"):
        len(a)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(a)
    with pytest.raises(ValueError, match="not intended"):
        sparse.spmatrix(DENSE)
    # only the allow-listed members, each asked for as its kind of result
    def ask(want, member, *args, out=None):
        return session.value(session.submit(m.KIND_OBJECT, want, out, f"sparse.csr_matrix.{member}",
                                            a._h, args, {}))
    with pytest.raises(NotAllowedError, match="ask for one"):
        ask(api.VALUE, "dot", cp.ones(4))           # a product is a matrix or an array
    with pytest.raises(NotAllowedError):
        ask(api.MULTI, "__class__")                  # not on the allow-list
    assert tuple(ask(api.MULTI, "shape")) == (3, 4)
    session.submit(m.KIND_OBJECT, api.ARRAY, session.new_id(), "sparse.csr_matrix.__mul__",
                   a._h, (2,), {})                   # a matrix asked for as an array
    with pytest.raises(TypeError, match="expected an array result"):
        session.sync()
    np.testing.assert_allclose((a @ cp.ones(4)).get(), DENSE @ np.ones(4))
    assert float(cp.arange(4).sum()) == 6
