"""Differential tests: indexing, assignment, views and copies."""

from __future__ import annotations

import numpy as np
import pytest


def _base(xp, dtype="int64"):
    return xp.arange(60, dtype=dtype).reshape(3, 4, 5)


# ---------------------------------------------------------------- basic indexing


BASIC_KEYS = [
    0, -1, 2, (1, 2), (0, -1, 3), (1, 2, 3),
    slice(None), slice(1, None), slice(None, None, -1), slice(None, None, 2), slice(-2, None),
    slice(5, 1), slice(10, 20),
    (slice(None), 1), (slice(None), slice(None, None, -2), 0), (slice(2, 0, -1), slice(1, 3)),
    Ellipsis, (Ellipsis, 1), (0, Ellipsis), (1, Ellipsis, slice(None, 2)),
    None, (None, 0), (slice(None), None, 1), (Ellipsis, None), (None, Ellipsis, None),
    (), (0, 0, 0), (-3, -4, -5),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_getitem(same, key):
    same(lambda xp: _base(xp)[key])


def test_newaxis_constant(same):
    same(lambda xp: _base(xp)[xp.newaxis, :, xp.newaxis].shape)


def test_basic_getitem_on_views(same):
    same(lambda xp: _base(xp)[::-1][1:, ::2][0])
    same(lambda xp: _base(xp).T[2, ::-1])
    same(lambda xp: xp.asarray(5.0)[()])
    same(lambda xp: xp.asarray(5.0)[...])
    same(lambda xp: xp.asarray(5.0)[None])


def test_integer_like_indices(same):
    same(lambda xp: _base(xp)[np.int64(1), np.int8(-1)])
    same(lambda xp: _base(xp)[True])
    same(lambda xp: _base(xp)[xp.asarray(1)])  # a 0-d integer array indexes like an int


@pytest.mark.parametrize("key", [3, -4, (0, 4), (0, 0, 5), (0, 0, -6)], ids=repr)
def test_out_of_bounds(same, key):
    err = same(lambda xp: _base(xp)[key])
    assert isinstance(err, IndexError)


def test_too_many_indices_and_bad_types(same):
    same(lambda xp: _base(xp)[0, 0, 0, 0])
    same(lambda xp: _base(xp)[..., ...])
    same(lambda xp: _base(xp)[1.5])
    same(lambda xp: _base(xp)["a"])
    same(lambda xp: xp.asarray(5.0)[0])


# ---------------------------------------------------------------- advanced indexing


ADVANCED_KEYS = [
    [0, 2], [[0, 1], [2, 0]], ([0, 2], [1, 3]), (slice(None), [0, 0, 3]), ([2, 0], slice(1, 3), [4, 0]),
    (Ellipsis, [1, -1]), ([0], [1], [2]), (1, [0, 3], slice(None)), ([[0], [2]], [[1, 2]]),
    ([], ), ([-1, -3],), (slice(None), None, [1, 2]),
]


@pytest.mark.parametrize("key", ADVANCED_KEYS, ids=repr)
def test_advanced_getitem_lists(same, key):
    same(lambda xp: _base(xp)[key])


@pytest.mark.parametrize("key", ADVANCED_KEYS[:9], ids=repr)
def test_advanced_getitem_numpy_arrays(same, key):
    parts = key if isinstance(key, tuple) else (key,)
    converted = tuple(np.asarray(k) if isinstance(k, list) else k for k in parts)
    same(lambda xp: _base(xp)[converted if isinstance(key, tuple) else converted[0]])


@pytest.mark.parametrize("key", ADVANCED_KEYS[:9], ids=repr)
def test_advanced_getitem_remote_arrays(same, key):
    def body(xp):
        parts = key if isinstance(key, tuple) else (key,)
        converted = tuple(xp.asarray(k) if isinstance(k, list) else k for k in parts)
        return _base(xp)[converted if isinstance(key, tuple) else converted[0]]

    same(body)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64", "intp"])
def test_index_array_dtypes(same, dtype):
    same(lambda xp: xp.arange(10.0)[xp.asarray([1, 3, 5], dtype=dtype)])
    same(lambda xp: xp.arange(10.0)[np.asarray([9, 0], dtype=dtype)])


def test_advanced_out_of_bounds(same):
    # NumPy raises IndexError; CuPy wraps out-of-bounds integer-array indices, and so does the
    # remote on any device (gpu_backend/devices/host_indices.py)
    cp = same.cp
    assert cp.arange(5)[[0, 5]].tolist() == [0, 0]
    assert cp.arange(5)[cp.asarray([-6])].tolist() == [4]
    same(lambda xp: _base(xp)[[0, 1], [0, 1, 2]])  # shape mismatch: IndexError
    same(lambda xp: xp.arange(5)[xp.asarray([1.0])])  # float arrays cannot index


def test_take_along_and_take(same):
    same(lambda xp: _base(xp).take([0, 2], axis=1))
    same(lambda xp: xp.take(_base(xp), xp.asarray([[1, 0]]), axis=2))


# ---------------------------------------------------------------- boolean masks


def test_boolean_mask_remote(same):
    same(lambda xp: _base(xp)[_base(xp) % 3 == 0])
    same(lambda xp: _base(xp)[xp.asarray([True, False, True])])
    same(lambda xp: _base(xp)[:, xp.asarray([False, True, True, False])])
    same(lambda xp: _base(xp)[_base(xp)[:, :, 0] > 20])
    same(lambda xp: xp.arange(4)[xp.zeros(4, dtype=bool)])


def test_boolean_mask_numpy(same):
    mask = np.arange(60).reshape(3, 4, 5) % 7 == 2
    same(lambda xp: _base(xp)[mask])
    same(lambda xp: _base(xp)[np.array([True, False, True])])
    same(lambda xp: _base(xp)[[True, False, True]])


def test_boolean_mask_scalar_and_mixed(same):
    same(lambda xp: _base(xp)[1, xp.asarray([True, False, True, False])])
    same(lambda xp: xp.asarray(3)[xp.asarray(True)])
    same(lambda xp: xp.asarray(3)[xp.asarray(False)])


def test_boolean_mask_wrong_shape(same):
    err = same(lambda xp: _base(xp)[xp.asarray([True, False])])
    assert isinstance(err, IndexError)
    same(lambda xp: _base(xp)[np.ones((3, 5), dtype=bool)])


# ---------------------------------------------------------------- assignment


SET_KEYS = [0, (1, 2), (slice(None), 1), (Ellipsis, 0), (slice(None, None, -1), 0, slice(1, 4)),
            [0, 2], ([0, 2], [1, 3]), (1, [0, 3], slice(None)), (None, 1)]


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_setitem_scalar(same, key):
    def body(xp):
        a = _base(xp)
        a[key] = -7
        return a

    same(body)


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_setitem_broadcast_remote_value(same, key):
    def body(xp):
        a = _base(xp, "float32")
        a[key] = xp.arange(5, dtype=xp.float64) * 0.5  # broadcast along the last axis
        return a

    same(body)


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_setitem_numpy_value(same, key):
    def body(xp):
        a = _base(xp)
        target_shape = np.empty((3, 4, 5))[key].shape
        a[key] = np.arange(int(np.prod(target_shape)), dtype=np.int16).reshape(target_shape) + 100
        return a

    same(body)


def test_setitem_python_list_and_values(same):
    def body(xp):
        a = xp.zeros((2, 3))
        a[0] = [1, 2, 3]
        a[1, 1:] = (7.5, 8.5)
        a[:, 0] = xp.asarray(9)
        a[-1, -1] = np.float32(4)
        a[0, 2] = True
        return a

    same(body)


def test_setitem_boolean_masks(same):
    def body(xp):
        a = _base(xp)
        a[a % 4 == 0] = 0
        a[xp.asarray([False, True, False])] = -1
        b = xp.arange(6.0)
        b[np.array([True, False] * 3)] = xp.asarray([10.0, 20.0, 30.0])
        c = xp.arange(5)
        c[c > 2] = np.asarray([7, 8])
        return a, b, c

    same(body)


def test_setitem_ellipsis_whole(same):
    def body(xp):
        a = xp.zeros((2, 3), dtype=xp.int32)
        b = a
        a[...] = xp.arange(3)
        c = xp.ones(4)
        c[...] = 2.5
        d = xp.asarray(1.0)
        d[...] = 5
        e = xp.zeros(3)
        e[:] = np.arange(3)
        return a, b is a, c, d, e

    same(body)


def test_setitem_casting(same):
    def body(xp):
        a = xp.zeros(3, dtype=xp.int32)
        a[0] = 2.9  # truncated, as NumPy and CuPy do
        a[1:] = xp.asarray([-1.7, 5.5])
        b = xp.zeros(2, dtype=xp.uint8)
        b[:] = xp.asarray([256, 3]) % 256
        return a, b

    same(body)


def test_setitem_out_of_range_python_int(same):
    def body(xp):
        a = xp.zeros(3, dtype=xp.uint8)
        a[0] = 300
        return a

    same(body)


def test_setitem_wrong_shape(same):
    def body(xp):
        a = xp.zeros((3, 4))
        a[0] = xp.ones(3)
        return a

    err = same(body)
    assert isinstance(err, ValueError)

    def body2(xp):
        a = xp.zeros((3, 4))
        a[:, 1] = np.ones((3, 2))
        return a

    same(body2)

    def body3(xp):
        a = xp.zeros((3, 4))
        a[[0, 1]] = xp.ones((3, 4))
        return a

    same(body3)


def test_setitem_out_of_bounds(same):
    def body(xp):
        a = xp.zeros(3)
        a[3] = 1
        return a

    err = same(body)
    assert isinstance(err, IndexError)

    a = same.cp.zeros(3)   # an index array wraps, as CuPy's does (NumPy: IndexError)
    a[[0, -4]] = 1
    assert a.tolist() == [1.0, 0.0, 1.0]


def test_setitem_complex_into_real(same):
    def body(xp):
        a = xp.zeros(2)
        a[0] = 1 + 2j
        return a

    same(body)  # TypeError on both sides


# ---------------------------------------------------------------- views and copies


def test_basic_slice_is_a_view(same):
    def body(xp):
        a = xp.arange(10)
        v = a[2:7:2]
        v[0] = 100
        w = a[::-1]
        w[0] = -9
        r = a.reshape(2, 5)[1]
        r[:] = 0
        return a, v

    same(body)


def test_view_of_view_writes_through(same):
    def body(xp):
        a = xp.zeros((4, 4))
        a[1:3][:, 1:3][0, 0] = 1
        a[..., 0][2] = 2
        a[None][0, 3, 3] = 3
        a.T[0, 1] = 4
        return a

    same(body)


def test_base_changes_seen_by_view(same):
    def body(xp):
        a = xp.arange(6.0)
        v = a[1:4]
        a[2] = -1
        a += 10
        return v

    same(body)


def test_advanced_index_is_a_copy(same):
    def body(xp):
        a = xp.arange(10)
        c = a[[1, 2, 3]]
        c[0] = 100
        m = a[a > 5]
        m[:] = 0
        return a, c, m

    same(body)


def test_view_flags(same):
    def body(xp):
        a = xp.arange(12).reshape(3, 4)
        return (a[1].flags.owndata, a[:, 1].flags.c_contiguous, a[[0, 1]].flags.owndata,
                a[:, ::2].strides, a[::-1].strides, a[1:].flags.c_contiguous)

    same(body)


def test_shares_memory(same):
    def body(xp):
        a = xp.arange(10)
        return (xp.shares_memory(a, a[2:5]), xp.shares_memory(a, a[[2, 3]]),
                xp.may_share_memory(a[:5], a[5:]))

    same(body)


def test_setitem_with_overlapping_self(same):
    def body(xp):
        a = xp.arange(8)
        a[1:] = a[:-1]
        b = xp.arange(8)
        b[::-1] = b
        return a, b

    same(body)


def test_setitem_remote_index_and_value(same):
    def body(xp):
        a = xp.zeros(6)
        idx = xp.asarray([5, 0, 3])
        a[idx] = xp.asarray([1.0, 2.0, 3.0])
        a[idx[:1]] += 10
        return a

    same(body)


def test_iteration_yields_views(same):
    def body(xp):
        a = xp.zeros((3, 2))
        for row in a:
            row += 1
        return a, [r.shape for r in a]

    same(body)


# ---------------------------------------------------------------- real / imag


def test_real_imag_views_and_setters(same):
    def body(xp):
        c = xp.zeros(3, dtype=xp.complex128)
        c.real = xp.arange(3.0)
        c.imag = 2
        c.imag[0] = -1
        r = xp.arange(3.0)
        r.real = 5
        return c, c.real, c.imag, r, r.imag, r.real

    same(body)


def test_imag_of_real_is_not_writable(same):
    def body(xp):
        r = xp.arange(3.0)
        r.imag = 1
        return r

    err = same(body)
    assert isinstance(err, TypeError)


# ---------------------------------------------------------------- in-place functions


def test_inplace_functions(same):
    def body(xp):
        a = xp.zeros(5)
        xp.copyto(a, xp.arange(5.0))
        b = xp.zeros((2, 3))
        xp.copyto(b, np.arange(3.0))  # broadcast host source
        xp.put(a, [0, 4], [-1.0, -2.0])
        xp.place(a, a > 2, [9.0])
        c = xp.arange(6)
        xp.putmask(c, c % 2 == 0, -c)
        d = xp.zeros((3, 3))
        xp.fill_diagonal(d, 7)
        e = xp.arange(6).reshape(2, 3)
        xp.put_along_axis(e, xp.asarray([[0], [2]]), 100, axis=1)
        return a, b, c, d, e

    same(body)


def test_copyto_casting_error(same):
    same(lambda xp: xp.copyto(xp.zeros(3, dtype=xp.int32), xp.ones(3)))


def test_inplace_functions_refuse_host_targets(cp):
    """Writing into a host array on the pool would change a copy only: refused, as CuPy refuses."""
    host = np.zeros(3)
    with pytest.raises(TypeError):
        cp.copyto(host, cp.ones(3))
    with pytest.raises(TypeError):
        np.copyto(host, cp.ones(3))
    with pytest.raises(TypeError):
        cp.put(host, [0], [1.0])
    with pytest.raises(TypeError):
        cp.random.shuffle(host)
    np.testing.assert_array_equal(host, np.zeros(3))
