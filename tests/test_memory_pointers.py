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
    with pytest.raises(Exception, match="holds no memory"):
        cp.ndarray((8,), np.float32, a.data).get()     # 32 bytes over a 16-byte allocation
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
