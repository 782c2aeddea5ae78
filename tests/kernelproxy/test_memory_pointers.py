"""``cupy.ndarray(shape, dtype, memptr, strides)`` and ``cupy.cuda.alloc`` (issue 9, from
CuPy's core tests): arrays made over memory named by a remote ``MemoryPointer`` share it
with its owner, as in CuPy; the pool checks that the memory is the session's own."""

from __future__ import annotations

import numpy as np
import pytest


def test_an_array_over_another_arrays_memory_shares_it(cp):
    a = cp.arange(6).astype(np.float32).reshape((2, 3))
    b = cp.ndarray((2, 3), np.float32, a.data)
    np.testing.assert_array_equal(b.get(), a.get())
    b += 1
    np.testing.assert_array_equal(a.get(), np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    assert b.data.ptr == a.data.ptr


def test_an_offset_pointer_and_fortran_order(cp):
    a = cp.arange(10, dtype=np.int64)
    b = cp.ndarray((2, 2), np.int64, a.data + 16, order="F")
    assert b.strides == (8, 16)
    np.testing.assert_array_equal(b.get(), np.array([[2, 4], [3, 5]]))


def test_self_overlapping_strides(cp):
    buf = cp.ndarray(20, np.uint8)
    a = cp.ndarray((2, 3), np.float32, buf.data, strides=(8, 4))
    assert a.strides == (8, 4)
    a[:] = 1
    a[0, 2] = 4
    assert float(a[1, 0]) == 4


def test_zero_strides_and_an_int_shape(cp):
    dummy = cp.ndarray(3)
    a = cp.ndarray(3, strides=(0,), memptr=dummy.data)
    assert a.shape == (3,) and a.strides == (0,)


def test_strides_without_memptr_allocate_what_they_reach(cp):
    a = cp.ndarray((2, 3), np.float32, strides=(12, 4), order="C")
    assert a.strides == (12, 4)
    a[...] = 2
    assert float(a.sum()) == 12
    with pytest.raises(ValueError):
        cp.ndarray((2, 3), np.float32, strides=(20, 4))      # past the contiguous size
    with pytest.raises(ValueError):
        cp.ndarray((2, 3), np.float32, strides=(-12, 4))     # negative, without memptr
    with pytest.raises(ValueError):
        cp.ndarray((2, 3), np.float32, strides=(8, 4), order="!")


def test_memory_outside_the_allocation_is_refused_and_the_session_goes_on(cp):
    a = cp.zeros(4, dtype=np.float32)
    # the allocation is what the pool's allocator gave (CuPy's rounds 16 bytes up to 512,
    # all the session's own, as a local array's): one more item reaches past it
    past = a.data.mem.size // 4 + 1
    with pytest.raises(Exception, match="holds no memory"):
        cp.ndarray((past,), np.float32, a.data).get()
    with pytest.raises(TypeError, match="MemoryPointer"):
        cp.ndarray((2,), np.float32, 12345)
    assert float((a + 1).sum()) == 4


def test_the_pointer_keeps_its_memory_alive(cp):
    a = cp.arange(4, dtype=np.int32)
    pointer = a.data
    del a
    b = cp.ndarray((4,), np.int32, pointer)
    np.testing.assert_array_equal(b.get(), np.arange(4))


def test_alloc_hands_out_session_memory(cp):
    pointer = cp.cuda.alloc(64)
    assert cp.cuda.memory.alloc is cp.cuda.alloc
    assert pointer.mem.size >= 64 and pointer.ptr == pointer.mem.ptr
    x = cp.ndarray((8,), np.float64, pointer)
    x[...] = 3
    assert float(x.sum()) == 24
    many = [cp.cuda.alloc(n) for n in range(1, 200)]   # no round trip each
    assert (many[-1] + 8).ptr == many[-1].ptr + 8
    assert cp.get_default_memory_pool().malloc(16).mem.size >= 16
    with pytest.raises(ValueError):
        cp.cuda.alloc(-1)


def test_views_over_views_never_reach_past_the_allocation(cp):
    """An array made by ``cupy.ndarray(memptr=p)`` keeps *p*'s memory as its own, as CuPy's
    does (``.data.mem`` is ``a``'s allocation, whatever the view's strides reach), so a
    view of it cannot widen what the next view may reach: the pool checks every address
    against the owner's allocation. (``asarray`` of an interface reports the memory CuPy
    sizes from the view instead: test_array_memory.py.)"""
    n = 1024
    a = cp.zeros(n, dtype=np.uint8)
    start, size = a.data.mem.ptr, a.data.mem.size
    wide = cp.ndarray((2,), np.uint8, a.data, strides=(n - 1,))
    assert (wide.data.mem.ptr, wide.data.mem.size) == (start, size)
    backwards = cp.ndarray((n,), np.uint8, a.data + (n - 1), strides=(-1,))
    assert (backwards.data.mem.ptr, backwards.data.mem.size) == (start, size)
    assert backwards[1:].data.mem.size == size   # (a view of it: the same memory)
    for base in (wide, backwards):
        with pytest.raises(Exception, match="holds no memory"):
            cp.ndarray((2,), np.uint8, base.data, strides=(2 * size,)).get()
        with pytest.raises(Exception, match="holds no memory"):
            cp.ndarray((8,), np.uint8, base.data + size).get()
    assert int(a.sum()) == 0


def test_structured_dtypes_over_a_pointer(cp, session):
    dt = np.dtype([("a", "i4"), ("b", "f4")])
    host = np.array([(1, 1.5), (2, 2.5)], dtype=dt)
    a = cp.asarray(host)
    b = cp.ndarray((2,), dt, a.data)
    assert b.dtype == dt
    np.testing.assert_array_equal(b.get(), host)
    c = cp.ndarray((2,), dt, strides=(8,))
    assert c.dtype == dt and c.strides == (8,)
    aligned = np.dtype([("x", "u1"), ("y", "f8")], align=True)
    d = cp.ndarray((3,), aligned, cp.zeros(3 * aligned.itemsize, dtype=np.uint8).data)
    assert d.dtype.itemsize == 16 and d.dtype.fields["y"][1] == 8
    if session.device.get("kind") == "cupy":   # NumPy reads an interface's padding as a
        assert d.dtype.names == ("x", "y")     # field of its own ('f1'); CuPy skips it


def test_a_pointer_of_another_session_is_refused(cp, pool, session):
    import kernelproxy
    from kernelproxy.modules import module_for
    other = kernelproxy.connect(pool.address, pool.token)
    try:
        foreign = module_for(other).zeros(4)
        cp = module_for(session)   # this test's session active again
        with pytest.raises(ValueError, match="another remote session"):
            cp.ndarray((4,), np.float64, foreign.data)
    finally:
        other.close()
    assert float(cp.ones(2).sum()) == 2


def test_an_allocation_of_no_bytes_is_at_address_zero(cp):
    empty = cp.cuda.alloc(0)
    assert empty.ptr == 0 and empty.mem.size == 0
    assert cp.ndarray((0,), np.float32, empty).size == 0
