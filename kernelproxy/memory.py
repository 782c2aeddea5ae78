"""``ndarray.data``: where an array's memory is on the pool's GPU, by address.

CuPy code reads ``x.data.ptr`` to tell views from copies (``a.data.ptr == b.data.ptr``)
and to hand memory to other code through ``__cuda_array_interface__``. A remote array's
address is an address on the pool's device: it is given out so that those comparisons
hold and so that an object describing it (``{"data": (x.data.ptr, False), ...}``) can be
passed back to this session's ``cupy`` functions, which the pool accepts only inside the
session's own allocations. Reading or writing through the address from the client cannot
work (the memory is in another machine's GPU), so the raw-memory methods of CuPy's
``MemoryPointer`` raise ``NotImplementedError`` saying so.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .state import current, namespace, proxy_cupy

__all__ = ["Memory", "MemoryPointer", "alloc", "memory_of", "array_at"]

_REMOTE = ("the memory is on gpu-workbench's remote GPU, not in this process: "
           "use cupy functions or .get()/.set() instead")


class Memory:
    """An allocation on the pool's device (``MemoryPointer.mem``): its address and size.

    It holds the remote array that owns the allocation, so that the memory outlives the
    arrays it was read from, as CuPy's does. An allocation made by :func:`alloc` learns its
    address on first use (one round trip then; none for code that never asks)."""

    __slots__ = ("_ptr", "_size", "device_id", "_owner")

    def __init__(self, ptr: int | None, size: int | None, device_id: int = 0,
                 owner: Any = None) -> None:
        self._ptr, self._size, self.device_id, self._owner = ptr, size, device_id, owner

    def _resolve(self) -> None:
        if self._ptr is None:
            session = self._owner._s
            data, start, size = session.value(session.submit(
                m.KIND_CUDA, api.VALUE, None, "array.data", self._owner._h, [], {},
                "cupy.cuda.Memory"))
            # an allocation of no bytes is at address 0, as CuPy's alloc(0)
            self._ptr, self._size = (start, size) if data else (0, 0)

    @property
    def ptr(self) -> int:
        self._resolve()
        return self._ptr

    @property
    def size(self) -> int:
        self._resolve()
        return self._size

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"<remote Memory 0x{self.ptr:x}, {self.size} bytes, device {self.device_id}>"


class MemoryPointer:
    """``cupy.cuda.MemoryPointer``: an address in an allocation of the pool's device,
    *offset* bytes into *mem*."""

    __slots__ = ("mem", "_offset")

    def __init__(self, mem: Memory, offset: int) -> None:
        self.mem = mem
        self._offset = operator.index(offset)

    @property
    def ptr(self) -> int:
        return self.mem.ptr + self._offset

    @property
    def device_id(self) -> int:
        return self.mem.device_id

    @property
    def device(self) -> Any:
        return namespace()["cupy.cuda"].Device(self.device_id)

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, offset: int) -> "MemoryPointer":
        if not isinstance(offset, int):
            return NotImplemented
        return MemoryPointer(self.mem, self._offset + offset)

    __radd__ = __add__

    def __sub__(self, offset: int) -> "MemoryPointer":
        if not isinstance(offset, int):
            return NotImplemented
        return self + (-offset)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MemoryPointer) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return hash(self.ptr)

    def __repr__(self) -> str:
        return f"<remote MemoryPointer 0x{self.ptr:x} on device {self.device_id}>"


def _refused(name: str):
    """A raw-memory method of CuPy's ``MemoryPointer``: refused, the memory being remote."""
    def method(self: MemoryPointer, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"MemoryPointer.{name}: {_REMOTE}")

    method.__name__ = name
    return method


for _name in ("copy_from_device", "copy_from_host", "copy_from", "copy_to_host", "memset"):
    setattr(MemoryPointer, _name, _refused(_name))
    setattr(MemoryPointer, _name + "_async", _refused(_name + "_async"))
del _name


def memory_of(array: Any) -> MemoryPointer:
    """``array.data``: one round trip to the pool (the address does not change; asked
    for rarely). The pointer keeps *array* (and so its memory) alive."""
    session = array._s
    ptr, start, size = session.value(session.submit(
        m.KIND_CUDA, api.VALUE, None, "array.data", array._h, [], {}, "ndarray.data"))
    return MemoryPointer(Memory(start, size, session.ordinal, array), ptr - start)


def alloc(size: int) -> MemoryPointer:
    """``cupy.cuda.alloc`` (``cupy.cuda.memory.alloc``): *size* bytes of the session's
    memory on the pool's device, from the session's pool. No round trip: the address is
    asked for when first read."""
    size = operator.index(size)
    if size < 0:
        raise ValueError(f"cannot allocate {size} bytes")
    return MemoryPointer(Memory(None, None, current.device, proxy_cupy().ndarray(size, np.uint8)), 0)


class _PointedMemory:
    """Memory at a remote pointer described as CuPy reads it (``__cuda_array_interface__``);
    the pool checks that the whole extent lies in one allocation of the session's."""

    __slots__ = ("__cuda_array_interface__", "_pointer")
    #: the array keeps the pointer's memory, as CuPy's ``ndarray(memptr=p)`` does (its
    #: ``.data`` is *p*, whose ``mem`` is the allocation): the device view says so
    _gpuwb_pointed = True

    def __init__(self, shape: tuple, dtype: np.dtype, pointer: MemoryPointer, strides: tuple) -> None:
        self._pointer = pointer   # its memory stays the session's until the op is sent
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype.str, "descr": dtype.descr,
                                         "strides": strides, "data": (pointer.ptr, False), "version": 3}


def _byte_range(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    """(left, right]: the bytes an array of *shape* and *strides* reaches from its
    pointer, as CuPy's ``_memory_range.get_range``."""
    if math.prod(shape) == 0:
        return 0, 0
    left = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    right = itemsize + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return left, right


def _contiguous_strides(shape: tuple, itemsize: int, c_order: bool) -> tuple:
    strides, step = [], itemsize
    for n in (reversed(shape) if c_order else shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides)) if c_order else tuple(strides)


def array_at(session: Any, shape: Any, dtype: Any, memptr: Any, strides: Any, order: Any) -> Any:
    """The memory that ``cupy.ndarray(shape, dtype, memptr, strides, order)`` views in
    *session*, as an object with ``__cuda_array_interface__`` (sent as a device view),
    checked as CuPy checks it; the pointer must be the session's. With *strides* and no
    *memptr*, CuPy allocates the bytes the strides reach, which must fit the contiguous
    size: so does this."""
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) \
        else tuple(operator.index(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError("Negative dimensions are not allowed")
    order_char = "C" if not order else str(order)[0].upper()
    if order_char not in "CFAK":
        raise ValueError("order not understood")
    dt = np.dtype(dtype)
    if memptr is not None and not isinstance(memptr, MemoryPointer):
        raise TypeError(f"memptr must be a cupy.cuda.MemoryPointer (an array's .data, or "
                        f"cupy.cuda.alloc), not {type(memptr).__name__}")
    owner = None if memptr is None else memptr.mem._owner
    if owner is not None and owner._s is not session:   # addresses of another worker
        raise ValueError("a MemoryPointer of another remote session cannot be used here")
    if strides is None:
        strides = _contiguous_strides(shape, dt.itemsize, order_char == "C")
    else:
        strides = tuple(operator.index(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError("shape and strides must have the same length")
    left, right = _byte_range(shape, strides, dt.itemsize)
    if memptr is None:
        if left != 0:
            raise ValueError("ndarray() with strides currently does not allow negative strides")
        contiguous = math.prod(shape) * dt.itemsize
        if right > contiguous:
            raise ValueError(f"ndarray() with strides must stay withing a contiguous size "
                             f"of {contiguous} but got {right}.")
        memptr = alloc(right)
    return _PointedMemory(shape, dt, memptr, strides)
