"""Differential tests: shape manipulation, joining, splitting, sorting and friends."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.differential import REFERENCE_IS_NUMPY


def _a(xp, dtype="int64"):
    return xp.arange(24, dtype=dtype).reshape(2, 3, 4)


# ---------------------------------------------------------------- reshape & co


@pytest.mark.parametrize("shape", [(6, 4), (24,), (4, -1), (-1,), (2, 2, 2, 3), (1, 24, 1), (-1, 2, 3)],
                         ids=repr)
def test_reshape(same, shape):
    same(lambda xp: _a(xp).reshape(shape))
    same(lambda xp: _a(xp).reshape(*shape))
    same(lambda xp: xp.reshape(_a(xp), shape))


def test_reshape_order_and_views(same):
    def body(xp):
        a = _a(xp)
        r = a.reshape(6, 4)
        r[0, 0] = -1  # a reshape of a contiguous array is a view
        f = a.reshape((4, 6), order="F")
        t = a.T.reshape(-1)  # a copy
        t[0] = 99
        return a, f, t, r.flags.owndata

    same(body)


@pytest.mark.parametrize("shape", [(5, 5), (-1, 5), (-1, -1), (25,), (2, 3, 5)], ids=repr)
def test_reshape_bad_size(same, shape):
    err = same(lambda xp: _a(xp).reshape(shape))
    assert isinstance(err, ValueError)


def test_reshape_zero_and_scalar(same):
    same(lambda xp: xp.zeros((0, 3)).reshape(3, 0))
    same(lambda xp: xp.asarray(5).reshape(1, 1))
    same(lambda xp: xp.ones((1, 1)).reshape(()))


@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (-1, 0, 1)], ids=repr)
def test_transpose(same, axes):
    same(lambda xp: _a(xp).transpose(axes))
    same(lambda xp: xp.transpose(_a(xp), axes))
    if axes is not None:
        same(lambda xp: _a(xp).transpose(*axes))


def test_transpose_errors_and_T(same):
    same(lambda xp: _a(xp).transpose(0, 1))
    same(lambda xp: _a(xp).transpose(0, 1, 1))
    same(lambda xp: (_a(xp).T, _a(xp).T.strides, xp.arange(3).T, _a(xp).mT))
    same(lambda xp: xp.swapaxes(_a(xp), 0, 2))
    same(lambda xp: xp.moveaxis(_a(xp), 0, -1))


def test_transpose_is_a_view(same):
    def body(xp):
        a = xp.zeros((2, 3))
        a.T[2, 1] = 5
        xp.transpose(a)[0, 0] = 1
        return a

    same(body)


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_flatten(same, order):
    same(lambda xp: _a(xp).ravel(order))
    same(lambda xp: _a(xp).T.ravel(order=order))
    same(lambda xp: xp.ravel(_a(xp)[:, ::2], order=order))
    same(lambda xp: _a(xp).T.flatten(order))


def test_ravel_view_flatten_copy(same):
    def body(xp):
        a = xp.arange(6).reshape(2, 3)
        a.ravel()[0] = -1
        a.flatten()[1] = -2
        return a

    same(body)


@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2), -1], ids=repr)
def test_squeeze(same, axis):
    same(lambda xp: xp.zeros((1, 3, 1)).squeeze(axis))
    same(lambda xp: xp.squeeze(xp.arange(3).reshape(1, 3, 1), axis=axis))


def test_squeeze_errors(same):
    err = same(lambda xp: xp.zeros((1, 3, 1)).squeeze(1))
    assert isinstance(err, ValueError)
    same(lambda xp: xp.zeros((1, 3)).squeeze(2))


@pytest.mark.parametrize("axis", [0, 1, -1, 3, (0, 2), (-1, 0)], ids=repr)
def test_expand_dims(same, axis):
    same(lambda xp: xp.expand_dims(_a(xp), axis))


def test_expand_dims_error(same):
    same(lambda xp: xp.expand_dims(_a(xp), 5))
    same(lambda xp: xp.expand_dims(_a(xp), (0, 0)))


# ---------------------------------------------------------------- joining


@pytest.mark.parametrize("axis", [0, 1, -1, None], ids=repr)
def test_concatenate(same, axis):
    def body(xp):
        a = xp.arange(6).reshape(2, 3)
        b = xp.arange(6, 12).reshape(2, 3)
        return xp.concatenate([a, b], axis=axis), xp.concatenate((a, b, a), axis)

    same(body)


def test_concatenate_mixed_inputs_and_promotion(same):
    same(lambda xp: xp.concatenate([xp.arange(3, dtype=xp.int8), xp.ones(2, dtype=xp.float32)]))
    same(lambda xp: xp.concatenate([xp.arange(3), xp.asarray(np.arange(2))]))
    same(lambda xp: xp.concatenate([xp.arange(3)], axis=0))


def test_concatenate_out_and_dtype(same):
    def body(xp):
        out = xp.zeros(5)
        r = xp.concatenate([xp.arange(2), xp.arange(3)], out=out)
        return r is out, out, xp.concatenate([xp.arange(2), xp.arange(3)], dtype=xp.float32)

    same(body)


def test_concatenate_errors(same):
    same(lambda xp: xp.concatenate([xp.ones((2, 3)), xp.ones((3, 2))]))
    same(lambda xp: xp.concatenate([xp.ones(3), xp.ones((1, 3))]))
    same(lambda xp: xp.concatenate([xp.ones(3), xp.ones(3)], axis=1))
    same(lambda xp: xp.concatenate([]))
    same(lambda xp: xp.concatenate([xp.asarray(1), xp.asarray(2)]))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(same, axis):
    same(lambda xp: xp.stack([xp.arange(6).reshape(2, 3), xp.zeros((2, 3), dtype=xp.int64)], axis=axis))


def test_stack_errors(same):
    same(lambda xp: xp.stack([xp.ones(3), xp.ones(4)]))
    same(lambda xp: xp.stack([xp.ones(3), xp.ones(3)], axis=2))


def test_vstack_hstack_dstack(same):
    def body(xp):
        a, b = xp.arange(3), xp.arange(3, 6)
        m = xp.arange(6).reshape(2, 3)
        return (xp.vstack([a, b]), xp.hstack([a, b]), xp.vstack((m, a)), xp.hstack([m, m]),
                xp.dstack([a, b]), xp.column_stack([a, b]), xp.hstack([xp.asarray(1), xp.asarray(2)]))

    same(body)


def test_vstack_errors(same):
    same(lambda xp: xp.vstack([xp.ones(3), xp.ones(4)]))
    same(lambda xp: xp.hstack([xp.ones((2, 3)), xp.ones((3, 3))]))


# ---------------------------------------------------------------- splitting


@pytest.mark.parametrize("spec", [2, [1, 3], [0, 2, 10], [3, 1], 4, (2,)], ids=repr)
def test_split_array_split(same, spec):
    same(lambda xp: xp.array_split(xp.arange(8), spec))
    same(lambda xp: xp.split(xp.arange(8), spec))


def test_split_lists_of_remote_arrays(cp):
    parts = cp.split(cp.arange(6), 3)
    assert type(parts) is list and len(parts) == 3
    assert all(isinstance(p, cp.ndarray) for p in parts)
    np.testing.assert_array_equal(parts[2].get(), [4, 5])
    parts[0][0] = 100  # views of the original, as in NumPy and CuPy


def test_split_views_write_through(same):
    def body(xp):
        a = xp.arange(6)
        parts = xp.split(a, 3)
        parts[1][0] = -1
        return a, parts

    same(body)


def test_split_axes_and_errors(same):
    same(lambda xp: xp.split(_a(xp), 2, axis=2))
    same(lambda xp: xp.array_split(_a(xp), 3, axis=-1))
    same(lambda xp: xp.hsplit(_a(xp), 3))
    same(lambda xp: xp.vsplit(xp.arange(12).reshape(4, 3), [1]))
    err = same(lambda xp: xp.split(xp.arange(7), 3))
    assert isinstance(err, ValueError)
    same(lambda xp: xp.array_split(xp.arange(7), 0))


# ---------------------------------------------------------------- where / nonzero


def test_where_three_args(same):
    def body(xp):
        a = _a(xp)
        return (xp.where(a > 10, a, -a), xp.where(a % 2 == 0, 1.5, 0), xp.where(True, a, 0),
                xp.where(xp.asarray([True, False, True, False]), a, xp.zeros(4, dtype=xp.int8)))

    same(body)


def test_where_one_arg_returns_tuple(same):
    same(lambda xp: xp.where(_a(xp) % 5 == 0))
    same(lambda xp: xp.where(xp.asarray([0, 3, 0, 2])))
    same(lambda xp: xp.where(xp.zeros((2, 2))))


def test_where_errors(same):
    same(lambda xp: xp.where(xp.ones(3) > 0, xp.ones(3)))
    same(lambda xp: xp.where(xp.ones(3) > 0, xp.ones(3), xp.ones(4)))


def test_nonzero(same):
    same(lambda xp: _a(xp).nonzero())
    same(lambda xp: xp.nonzero(_a(xp) % 7 == 1))
    same(lambda xp: xp.flatnonzero(_a(xp) % 7 == 1))
    same(lambda xp: xp.argwhere(_a(xp) % 7 == 1))
    same(lambda xp: xp.count_nonzero(_a(xp) % 7 == 1))


def test_nonzero_remote_types(cp):
    r = cp.arange(5).nonzero()
    assert type(r) is tuple and len(r) == 1 and isinstance(r[0], cp.ndarray)
    r = cp.where(cp.eye(3) > 0)
    assert type(r) is tuple and len(r) == 2


# ---------------------------------------------------------------- sorting


@pytest.mark.parametrize("axis", [-1, 0, 1, None], ids=repr)
@pytest.mark.parametrize("dtype", ["int32", "float64", "uint8", "bool"])
def test_sort_argsort(same, axis, dtype):
    def body(xp):
        a = ((xp.arange(24) * 7) % 11).reshape(2, 3, 4).astype(dtype)
        return xp.sort(a, axis=axis), xp.argsort(a, axis=axis, kind="stable")

    same(body)


def test_sort_in_place(same):
    def body(xp):
        a = xp.asarray([[3, 1, 2], [9, 7, 8]])
        b = a
        r = b.sort()
        c = xp.asarray([[3, 1], [0, 2]])
        c.sort(axis=0)
        v = xp.asarray([5, 4, 3, 2, 1])
        v[1:4].sort()
        return a, r, c, b is a, v

    same(body)


def test_sort_nan_and_complex(same):
    same(lambda xp: xp.sort(xp.asarray([3.0, np.nan, 1.0, -np.inf])))
    same(lambda xp: xp.argsort(xp.asarray([3.0, np.nan, 1.0, -np.inf])))
    same(lambda xp: xp.sort(xp.asarray([1 + 2j, 1 - 1j, -1 + 0j])))


def test_sort_bad_axis(same):
    same(lambda xp: xp.sort(xp.arange(3), axis=1))


def test_searchsorted_partition(same):
    same(lambda xp: xp.searchsorted(xp.arange(0, 10, 2), xp.asarray([3, 4, 11])))
    same(lambda xp: xp.arange(0, 10, 2).searchsorted(4, side="right"))
    same(lambda xp: xp.partition(xp.asarray([5, 1, 4, 2, 3]), 2)[2])


# ---------------------------------------------------------------- unique


def test_unique_plain(same):
    same(lambda xp: xp.unique(xp.asarray([3, 1, 2, 3, 1, 1])))
    same(lambda xp: xp.unique(xp.asarray([[2.5, 1.0], [2.5, np.nan]])))
    same(lambda xp: xp.unique(xp.zeros(0)))


@pytest.mark.parametrize("kwargs", [
    {"return_counts": True}, {"return_index": True}, {"return_inverse": True},
    {"return_index": True, "return_counts": True},
    {"return_index": True, "return_inverse": True, "return_counts": True},
], ids=lambda k: "-".join(k))
def test_unique_tuples(same, kwargs):
    same(lambda xp: xp.unique(xp.asarray([3, 1, 2, 3, 1, 1, 7]), **kwargs))


def test_unique_axis(same):
    same(lambda xp: xp.unique(xp.asarray([[1, 2], [1, 2], [0, 5]]), axis=0))


def test_unique_remote_types(cp):
    u = cp.unique(cp.asarray([2, 2, 1]))
    assert isinstance(u, cp.ndarray)
    vals, counts = cp.unique(cp.asarray([2, 2, 1]), return_counts=True)
    assert isinstance(vals, cp.ndarray) and isinstance(counts, cp.ndarray)
    np.testing.assert_array_equal(counts.get(), [1, 2])


# ---------------------------------------------------------------- astype / copy / view / fill


@pytest.mark.parametrize("src", ["int32", "float64", "bool", "complex64", "uint8", "float16"])
@pytest.mark.parametrize("dst", ["int8", "uint16", "float32", "float64", "bool", "complex128", "int64"])
def test_astype(same, src, dst):
    with warnings.catch_warnings():  # complex -> real casts warn (ComplexWarning), both sides
        warnings.simplefilter("ignore")
        same(lambda xp: xp.asarray([[0, 1, 2], [3, 250, 7]]).astype(src).astype(dst))


def test_astype_options(same):
    def body(xp):
        a = xp.arange(6, dtype=xp.float64).reshape(2, 3)
        same_dtype = a.astype(xp.float64)
        no_copy = a.astype(xp.float64, copy=False)
        f = a.astype(xp.float32, order="F")
        return (same_dtype is a, no_copy is a, f.flags.f_contiguous, a.astype("i4"),
                a.astype(int), a.astype(float), a.astype(complex), a.astype(bool))

    same(body)


def test_astype_casting_errors(same):
    same(lambda xp: xp.arange(3.5).astype(xp.int32, casting="safe"))
    same(lambda xp: xp.arange(3).astype("not-a-dtype"))


def test_astype_complex_warning(same):
    with pytest.warns(np.exceptions.ComplexWarning):
        same(lambda xp: xp.asarray([1 + 1j]).astype(xp.float64))


def test_copy_method(same):
    def body(xp):
        a = xp.arange(6).reshape(2, 3)
        c = a.copy()
        c[0, 0] = 10
        f = a.copy(order="F")
        return a, c, f.flags.f_contiguous, c.flags.owndata

    same(body)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "uint32", "float32", "int16", "int64", "complex64"])
def test_view_dtype(same, dtype):
    same(lambda xp: xp.arange(8, dtype=xp.float64).view(dtype))
    same(lambda xp: xp.arange(8, dtype=xp.int32).reshape(2, 4).view(dtype))


def test_view_shares_data(same):
    def body(xp):
        a = xp.zeros(4, dtype=xp.int32)
        v = a.view(xp.uint8)
        v[4] = 1
        w = a.view()
        w[0] = 7
        return a, v.shape, w.flags.owndata

    same(body)


def test_view_errors(same):
    same(lambda xp: xp.arange(3, dtype=xp.int8).view(xp.int16))


@pytest.mark.skipif(not REFERENCE_IS_NUMPY, reason=(
    "CuPy allows this misaligned int16 view and the copy in .get() faults with "
    "cudaErrorMisalignedAddress, which corrupts the reference process's CUDA context "
    "(the remote side of it is tests/gpu_backend/test_faults.py)"))
def test_misaligned_view(same):
    same(lambda xp: xp.arange(6, dtype=xp.int8).reshape(2, 3)[:, :2].view(xp.int16))


@pytest.mark.parametrize("value", [0, 3, -1.5, True, 2 + 1j], ids=repr)
@pytest.mark.parametrize("dtype", ["int32", "float32", "bool", "complex64"])
def test_fill(same, value, dtype):
    def body(xp):
        a = xp.empty((2, 3), dtype=dtype)
        r = a.fill(value)
        return r, a

    with warnings.catch_warnings():  # complex into a real array: ComplexWarning on both sides
        warnings.simplefilter("ignore")
        same(body)


def test_fill_view_and_remote_value(same):
    def body(xp):
        a = xp.zeros((3, 3))
        a[1].fill(4)
        a[:, 2].fill(xp.asarray(9.0))
        return a

    same(body)


def test_fill_overflow(same):
    def body(xp):
        a = xp.zeros(2, dtype=xp.int8)
        a.fill(1000)
        return a

    same(body)


# ---------------------------------------------------------------- flip / roll / repeat / tile / take / clip


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)], ids=repr)
def test_flip(same, axis):
    same(lambda xp: xp.flip(_a(xp), axis=axis))


def test_flip_helpers(same):
    same(lambda xp: (xp.fliplr(_a(xp)[0]), xp.flipud(_a(xp)[0]), xp.rot90(_a(xp)[0]), xp.rot90(_a(xp)[0], 3)))
    same(lambda xp: xp.flip(_a(xp), axis=3))


@pytest.mark.parametrize("shift,axis", [(1, None), (-2, None), (1, 0), (5, -1), ((1, 2), (0, 2)), (30, 1)],
                         ids=repr)
def test_roll(same, shift, axis):
    same(lambda xp: xp.roll(_a(xp), shift, axis=axis))


@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), ([1, 0, 2], 1), (0, -1), ([2, 1], 0)],
                         ids=repr)
def test_repeat(same, repeats, axis):
    same(lambda xp: xp.repeat(_a(xp), repeats, axis=axis))
    same(lambda xp: _a(xp).repeat(repeats, axis))


def test_repeat_errors(same):
    same(lambda xp: xp.repeat(xp.arange(3), [1, 2]))
    same(lambda xp: xp.repeat(xp.arange(3), -1))


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 2), (0,), (2, 1, 1, 2)], ids=repr)
def test_tile(same, reps):
    same(lambda xp: xp.tile(xp.arange(6).reshape(2, 3), reps))


@pytest.mark.parametrize("indices,axis,mode", [
    ([0, 5, 23], None, "raise"), ([[1, 2], [0, 0]], 1, "raise"), (-1, 2, "raise"), ([4, -6], 2, "wrap"),
    ([7, -9], 0, "clip"), (np.asarray([1, 0]), 0, "raise"),
], ids=repr)
def test_take(same, indices, axis, mode):
    same(lambda xp: xp.take(_a(xp), indices, axis=axis, mode=mode))
    same(lambda xp: _a(xp).take(indices, axis=axis, mode=mode))


def test_take_remote_indices_and_errors(same):
    same(lambda xp: _a(xp).take(xp.asarray([2, 0]), axis=1))
    assert _a(same.cp).take([24]).tolist() == [0]   # CuPy's take wraps (NumPy: IndexError)
    same(lambda xp: _a(xp).take([0], axis=3))


def test_take_along_axis(same):
    def body(xp):
        a = xp.asarray([[10, 30, 20], [60, 40, 50]])
        return xp.take_along_axis(a, xp.argsort(a, axis=1), axis=1)

    same(body)


@pytest.mark.parametrize("lo,hi", [(2, 10), (None, 5), (5, None), (10, 2), (2.5, 7.5)], ids=repr)
def test_clip(same, lo, hi):
    same(lambda xp: xp.clip(_a(xp), lo, hi))
    same(lambda xp: _a(xp).clip(lo, hi))


def test_clip_arrays_and_out(same):
    def body(xp):
        a = xp.arange(6.0)
        out = xp.zeros(6)
        r = xp.clip(a, xp.asarray([0, 1, 2, 3, 4, 5]) - 1, 3, out=out)
        return r is out, out, a.clip(min=xp.asarray(2.0)), xp.clip(xp.arange(5, dtype=xp.uint8), 1, 3)

    same(body)


def test_clip_errors(same):
    same(lambda xp: xp.clip(xp.arange(3), xp.ones(2), 2))


# ---------------------------------------------------------------- misc shapes


def test_broadcast_and_atleast(same):
    same(lambda xp: xp.broadcast_to(xp.arange(3), (2, 3)))
    same(lambda xp: xp.broadcast_to(xp.arange(3), (2, 4)))
    same(lambda xp: tuple(xp.broadcast_arrays(xp.arange(3), xp.ones((2, 1)))))  # CuPy: a list
    same(lambda xp: (xp.atleast_1d(xp.asarray(1.0)), xp.atleast_2d(xp.arange(3)),
                     xp.atleast_3d(xp.arange(3))))
    same(lambda xp: tuple(xp.atleast_1d(xp.asarray(1.0), xp.arange(2))))


def test_pad_diag_tri(same):
    same(lambda xp: xp.pad(xp.arange(6).reshape(2, 3), ((1, 0), (2, 1))))
    same(lambda xp: xp.pad(xp.arange(4), 2, mode="edge"))
    same(lambda xp: (xp.diag(xp.arange(3)), xp.diag(xp.arange(9).reshape(3, 3), k=1)))
    same(lambda xp: (xp.tril(xp.ones((3, 3))), xp.triu(xp.ones((3, 4)), k=1)))
