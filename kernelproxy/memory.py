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

from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

__all__ = ["Memory", "MemoryPointer", "memory_of"]

_REMOTE = ("the memory is on gpu-workbench's remote GPU, not in this process: "
           "use cupy functions or .get()/.set() instead")


class Memory:
    """An allocation on the pool's device (``MemoryPointer.mem``): its address and size."""

    __slots__ = ("ptr", "size", "device_id")

    def __init__(self, ptr: int, size: int, device_id: int = 0) -> None:
        self.ptr, self.size, self.device_id = ptr, size, device_id

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"<remote Memory 0x{self.ptr:x}, {self.size} bytes, device {self.device_id}>"


class MemoryPointer:
    """``cupy.cuda.MemoryPointer`` of a remote array: an address in an allocation of the pool."""

    __slots__ = ("mem", "ptr", "device_id")

    def __init__(self, mem: Memory, offset: int) -> None:
        self.mem = mem
        self.ptr = mem.ptr + offset
        self.device_id = mem.device_id

    @property
    def device(self) -> Any:
        from .cuda import Device
        return Device(self.device_id)

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, offset: int) -> "MemoryPointer":
        if not isinstance(offset, int):
            return NotImplemented
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

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
    for rarely)."""
    from .cuda import get_device_id
    session = array._s
    ptr, start, size = session.value(session.submit(
        m.KIND_CUDA, api.VALUE, None, "array.data", array._h, [], {}, "ndarray.data"))
    return MemoryPointer(Memory(start, size, get_device_id()), ptr - start)
