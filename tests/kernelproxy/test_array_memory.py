"""Array memory seen from the client: ``.data``, ``.base``, ``.flat``, interfaces by address.

``x.data.ptr`` is an address on the pool's device: equal for views of the same memory,
different for copies, and accepted back (through an object's ``__cuda_array_interface__``)
only inside the session's own allocations. ``.base`` is the very client object that owns
a view's memory. ``.flat`` follows NumPy/CuPy's flat iterator.
"""

from __future__ import annotations

import gc

import msgpack
import numpy as np
import pytest

import kernelproxy
from gpu_backend.protocol import codec
from gpu_backend.protocol.errors import InvalidHandleError
from kernelproxy.modules import module_for


class Interface:
    """A foreign object describing memory by address, as Numba's or PyTorch's arrays do."""

    def __init__(self, ptr, shape, dtype, strides=None, mask=None, version=3):
        self.desc = {"shape": shape, "typestr": np.dtype(dtype).str, "data": (ptr, False),
                     "strides": strides, "version": version}
        if mask is not None:
            self.desc["mask"] = mask

    @property
    def __cuda_array_interface__(self):
        return self.desc


def of(a):
    return Interface(a.data.ptr, a.shape, a.dtype, a.strides)


# ---------------------------------------------------------------- .data

def test_data_pointer_tells_views_from_copies(cp):
    a = cp.arange(24, dtype=cp.float32).reshape(4, 6)
    view, copy = a[1:], a.copy()
    assert a.data.ptr == a.reshape(24).data.ptr
    assert view.data.ptr == a.data.ptr + 6 * 4
    assert copy.data.ptr != a.data.ptr
    assert view.data.mem.ptr == a.data.mem.ptr and a.data.mem.size >= a.nbytes
    assert int(a.data) == a.data.ptr and (a.data + 8).ptr == a.data.ptr + 8
    assert a.data.device_id == 0 and isinstance(a.data, cp.cuda.MemoryPointer)
    assert cp.zeros((0,)).data.ptr == 0   # as in CuPy: no memory behind an empty array


def test_raw_memory_access_is_refused_clearly(cp):
    a = cp.ones(4)
    with pytest.raises(NotImplementedError, match="remote GPU"):
        a.data.copy_to_host(np.empty(4).ctypes.data, 32)
    with pytest.raises(NotImplementedError, match="remote GPU"):
        a.data.memset(0, 32)


def test_no_interfaces_for_local_consumers(cp):
    a = cp.ones(4)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="remote GPU"):
        a.__cuda_array_interface__  # noqa: B018
    with pytest.raises(BufferError, match="remote GPU"):
        np.from_dlpack(a)


# ---------------------------------------------------------------- __cuda_array_interface__ back in

@pytest.mark.parametrize("make", [
    lambda cp: cp.arange(24, dtype=cp.float64).reshape(2, 3, 4),
    lambda cp: cp.arange(24, dtype=cp.int16).reshape(2, 3, 4).T,
    lambda cp: cp.arange(24, dtype=cp.complex64).reshape(4, 6)[::2, 1::2],
    lambda cp: cp.arange(10)[::-1],
])
def test_interface_of_session_memory_is_a_view(cp, make):
    a = make(cp)
    b = cp.asarray(of(a))
    assert b.shape == a.shape and b.dtype == a.dtype and b.strides == a.strides
    np.testing.assert_array_equal(b.get(), a.get())
    a.fill(7)   # the same memory, not a copy
    np.testing.assert_array_equal(b.get(), a.get())
    np.testing.assert_array_equal(cp.asnumpy(of(a)), a.get())
    np.testing.assert_array_equal((cp.add(of(a), 1)).get(), a.get() + 1)


def test_interface_copies_and_orders(cp):
    a = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    c = cp.array(of(a))
    a.fill(0)
    np.testing.assert_array_equal(c.get(), np.arange(12, dtype=np.float32).reshape(3, 4))
    f = cp.asarray(of(c), order="F")
    assert f.flags.f_contiguous
    empty = cp.asarray(Interface(0, (0, 3), np.float32))
    assert empty.shape == (0, 3)


def test_interface_view_outlives_its_owner(cp):
    a = cp.arange(6)
    view = cp.asarray(of(a))
    del a
    np.testing.assert_array_equal(view.get(), np.arange(6))


def test_interface_outside_the_session_is_refused(cp, pool, session):
    a = cp.arange(8, dtype=cp.int64)
    # one element past the allocation's end: not the session's memory
    with pytest.raises(InvalidHandleError, match="holds no memory"):
        cp.asarray(Interface(a.data.mem.ptr + a.data.mem.size, (1,), np.int64)).get()
    with pytest.raises(InvalidHandleError, match="holds no memory"):
        cp.asarray(Interface(a.data.ptr, (a.data.mem.size // 8 + 1,), np.int64)).get()   # past it
    with pytest.raises(InvalidHandleError, match="holds no memory"):
        cp.asarray(Interface(8, (4,), np.int8)).get()
    # another session's memory is not this one's: its address names nothing here, or (on a
    # GPU, where each worker's pool may hand out the same addresses in its own process)
    # this session's own memory, never the other's values
    other = kernelproxy.connect(pool.address, pool.token)
    try:
        theirs = module_for(other).full(4, 777, dtype=np.int64)
        ptr = theirs.data.ptr
        module_for(session)
        try:
            got = cp.asarray(Interface(ptr, (4,), np.int64)).get()
        except InvalidHandleError as exc:
            assert "holds no memory" in str(exc)
        else:
            assert not (got == 777).all(), got
    finally:
        module_for(session)
        other.close()
    assert float(a.sum()) == 28   # the session goes on


#: Arrays whose memory is then named by address, as CuPy's TestCudaArrayInterface names
#: them (``test_with_strides``: a transposed one; ``test_with_zero_size_array``) and more.
VIEWED = {
    "transposed": lambda xp, dt: xp.arange(24, dtype=dt).reshape(2, 3, 4).T,
    "contiguous": lambda xp, dt: xp.arange(24, dtype=dt).reshape(2, 3, 4),
    "strided": lambda xp, dt: xp.arange(24, dtype=dt).reshape(2, 3, 4)[:, ::2, 1:],
    "reversed": lambda xp, dt: xp.arange(24, dtype=dt)[::-1],
    "broadcast": lambda xp, dt: xp.broadcast_to(xp.arange(4, dtype=dt), (5, 4)),
    "0-d": lambda xp, dt: xp.arange(24, dtype=dt)[5:6].reshape(()),
    "empty": lambda xp, dt: xp.arange(0, dtype=dt),
}


def _cupy_size(shape, strides, itemsize):
    """What CuPy gives the memory of an array it makes over an interface
    (``_convert_object_with_cuda_array_interface`` in cupy/_core/core.pyx): the largest
    |extent × stride| of its axes where the interface gives strides, else the contiguous
    size. Written out here as the reference where the reference is NumPy."""
    if strides is None:
        return int(np.prod(shape)) * itemsize
    return max((abs(n * s) for n, s in zip(shape, strides)), default=0)


#: (A 0-d interface's strides (): CuPy then sizes its memory by no axis, 0 bytes; with none,
#: by its item. The pool's view keeps the strides the interface gave.)
@pytest.mark.parametrize("viewed, with_strides", [
    (v, w) for v in sorted(VIEWED) for w in (True, False)])
@pytest.mark.parametrize("dtype", [np.float64, np.int16])
def test_memory_of_an_array_over_an_interface_is_cupys(same, viewed, with_strides, dtype):
    """``b = cupy.asarray(obj)``, *obj* describing *a*'s memory: ``b.data.ptr``,
    ``b.data.mem.ptr`` and ``b.data.mem.size`` (relative to the interface's address), and
    those of a view of *b* (the same memory), are CuPy's. CuPy's ``test_with_strides``
    asserts ``a.nbytes == b.data.mem.size``; the pool reported *a*'s allocation (512)."""
    def body(xp):
        a = VIEWED[viewed](xp, dtype)
        strides = a.strides if with_strides or not a.flags.c_contiguous else None
        if xp is np:   # no device memory: what CuPy gives, by its rule
            size = _cupy_size(a.shape, strides, a.itemsize)
            return 0, 0, size, a.strides, 0, size
        ptr = a.data.ptr if a.size else 0
        b = xp.asarray(Interface(ptr, a.shape, a.dtype, strides))
        view = b.T
        return (b.data.ptr - ptr, b.data.mem.ptr - ptr, b.data.mem.size, b.strides,
                view.data.mem.ptr - ptr, view.data.mem.size)

    figures = same(body)
    if viewed == "transposed" and dtype == np.float64:
        assert figures[2] == 192   # CuPy's test_with_strides: a.nbytes


def test_memory_reported_past_the_owner_reaches_nothing_there(cp):
    """The memory CuPy gives an array over an interface can reach past the array that owns
    it (counted forward of a negative-strided view; a wide-strided view's is wider): it is
    reported so, but the pool checks every address against the owner's allocation, so no
    view by address reaches past it."""
    a = cp.arange(64, dtype=cp.float64)
    end = a.data.mem.ptr + a.data.mem.size
    for viewed in (a[::-1], a[::63]):
        b = cp.asarray(of(viewed))
        mem = b.data.mem
        assert mem.ptr + mem.size > end
        with pytest.raises(InvalidHandleError, match="holds no memory"):
            cp.asarray(Interface(mem.ptr, (mem.size,), np.uint8)).get()
        with pytest.raises(InvalidHandleError, match="holds no memory"):
            cp.asarray(Interface(end, (1,), np.uint8)).get()
        with pytest.raises(Exception, match="holds no memory"):
            cp.ndarray((mem.size,), np.uint8, b.data - (b.data.ptr - mem.ptr)).get()
        np.testing.assert_array_equal(b.get(), viewed.get())


def test_an_array_over_another_arrays_memory_is_counted_once(cp, session):
    """The session's memory counts an allocation once, whatever arrays are made over it
    (by interface or by pointer), for as long as any of them keeps it."""
    def used():
        gc.collect()
        return session.memory_info()["memory_used"]

    before = used()
    a = cp.zeros(1 << 16, dtype=cp.float64)
    with_a = used()
    assert with_a >= before + a.nbytes
    b = cp.asarray(of(a[::-1]))
    c = cp.ndarray((1024,), cp.float64, a.data + 8, strides=(16,))
    assert used() == with_a
    del a
    assert used() == with_a            # kept by b and c, still counted
    assert float(b.sum() + c.sum()) == 0.0
    del b, c
    assert used() == before


class Dummy:
    """As cupy.testing's helper: the interface is built when read, asking the pool itself."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        desc = {"shape": self.a.shape, "typestr": self.a.dtype.str, "data": (self.a.data.ptr, False),
                "version": 3}
        if not self.a.flags.c_contiguous:
            desc["strides"] = self.a.strides
        return desc


def test_interface_read_while_encoding_asks_the_pool(cp):
    for a in (cp.arange(6.0).reshape(2, 3), cp.arange(6.0).reshape(2, 3).T):
        b = cp.asarray(Dummy(a))
        c = cp.add(Dummy(a), (Dummy(a), 1)[1])
        np.testing.assert_array_equal(b.get(), a.get())
        np.testing.assert_array_equal(c.get(), a.get() + 1)
    assert float(cp.ones(3).sum()) == 3.0   # later ops are intact


def test_interface_checks_like_cupy(cp):
    a = cp.arange(4, dtype=cp.int32)
    with pytest.raises(ValueError, match="masked"):
        cp.asarray(Interface(a.data.ptr, (4,), np.int32, mask=object()))
    with pytest.raises(ValueError, match="byte-order"):
        cp.asarray(Interface(a.data.ptr, (1,), ">i4"))
    with pytest.raises(ValueError, match="Unsupported dtype <U4"):
        cp.asarray(Interface(a.data.ptr, (1,), "U4"))


def test_malformed_device_views_are_refused():
    hook = codec.ext_hook_for(lambda hid: hid, lambda *view: view)
    for fields in ([-1, [1], "<f8", None], [0, [1], "<f8"], [0, [2], "<f8", [8, 8]],
                   [0, [1], "O", None], ["0", [1], "<f8", None]):
        data = msgpack.packb([msgpack.ExtType(codec.EXT_DEVICE_VIEW, msgpack.packb(fields))])
        with pytest.raises(codec.CodecError):
            msgpack.unpackb(data, ext_hook=hook)
    data = msgpack.packb(msgpack.ExtType(codec.EXT_DEVICE_VIEW, msgpack.packb([0, [1], "<f8", None])))
    with pytest.raises(codec.CodecError, match="not accepted"):
        codec.unpackb(data)   # the client decodes replies: no view can come back


# ---------------------------------------------------------------- .base

def test_base_is_the_owning_object(cp):
    a = cp.zeros((4, 6))
    assert a.base is None
    b = a[1:]
    c = b[:, ::2]
    assert b.base is a and c.base is a
    assert a.reshape(24).base is a and a.T.base is a
    assert a.copy().base is None


def test_base_of_a_view_whose_owner_was_dropped(cp):
    a = cp.arange(10)
    view = a[2:]
    del a
    owner = view.base
    assert owner is not None and owner.shape == (10,)
    assert view.base is owner   # the same object while the client holds it
    np.testing.assert_array_equal(owner.get(), np.arange(10))


def test_complex_parts_view_their_array(cp):
    x = cp.ones(3, dtype=cp.complex128)
    assert x.real.base is x and x.imag.base is x


# ---------------------------------------------------------------- .flat

def test_flat_basics(cp):
    a = cp.arange(24).reshape(2, 3, 4)
    it = a.flat
    assert it.base is a and iter(it) is it and len(it) == 24 and len(a[::2].flat) == 12
    assert [int(v) for v in a[:, 0].flat] == [0, 1, 2, 3, 12, 13, 14, 15]
    next(it)
    np.testing.assert_array_equal(it.copy().get(), np.arange(24))
    assert isinstance(it, cp.flatiter)


@pytest.mark.parametrize("index", [Ellipsis, 0, 10, -1, slice(None), slice(None, 10),
                                   slice(None, None, 2), slice(None, None, -1), slice(10, None, -2)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_flat_getitem(same, index, order):
    same(lambda xp: xp.asarray(np.arange(24.0).reshape(2, 3, 4), order=order).flat[index])


@pytest.mark.parametrize("index", [Ellipsis, 5, slice(None), slice(1, 20, 3), slice(None, None, -2)])
@pytest.mark.parametrize("value", [1, "vector", "matrix"])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_flat_setitem(same, index, value, layout):
    def body(xp):
        a = xp.zeros((4, 6), dtype=np.float32, order="F" if layout == "F" else "C")
        target = a[:, ::2] if layout == "strided" else a
        v = {1: 1, "vector": xp.asarray(np.arange(3.0)),
             "matrix": xp.asarray(np.arange(6.0).reshape(2, 3))}[value]
        if isinstance(index, int) and value != 1:
            v = v[1]
        target.flat[index] = v
        return a
    same(body)


@pytest.mark.parametrize("index", [None, (0,), True, [0], "array", 1.5])
def test_flat_refuses_other_indices(cp, index):
    a = cp.arange(6)
    key = cp.array([0]) if index == "array" else index
    with pytest.raises(IndexError):
        a.flat[key]
    with pytest.raises(IndexError):
        a.flat[key] = 1


# ---------------------------------------------------------------- the array itself, where CuPy gives it

def test_no_copy_returns_the_array_itself(cp):
    a = cp.ones((3, 4))
    assert cp.array(a, copy=False) is a and cp.array(a, copy=None) is a
    assert cp.array(a, copy=True) is not a
    assert cp.array(a, copy=False, ndmin=3).base is a
    assert cp.ascontiguousarray(a) is a and cp.ascontiguousarray(a, dtype=a.dtype) is a
    assert cp.ascontiguousarray(a.T) is not a and cp.ascontiguousarray(a.T).flags.c_contiguous
    assert cp.asfortranarray(a.T) is a.T or cp.asfortranarray(a.T).flags.f_contiguous
    f = cp.asfortranarray(a)
    assert cp.asfortranarray(f) is f and cp.ascontiguousarray(a, dtype=cp.float32) is not a


def test_unique_results_are_named(cp):
    a = cp.asarray(np.array([3, 1, 3, 2]))
    result = cp.unique_all(a)
    assert type(result).__name__ == "UniqueAllResult"
    np.testing.assert_array_equal(result.values.get(), [1, 2, 3])
    np.testing.assert_array_equal(result.counts.get(), [1, 1, 2])
    assert cp.unique_counts(a).counts.shape == (3,)
    assert cp.unique_inverse(a).inverse_indices.shape == (4,)


def test_grids_take_remote_bounds(same):
    same(lambda xp: xp.mgrid[xp.asarray(np.array(-1.0)):xp.asarray(np.array(1.0)):5j])
    same(lambda xp: xp.mgrid[0:2:3j, xp.asarray(np.array(1)):3])
