"""Session memory named by address (``ndarray.data``, ``__cuda_array_interface__``, a
``memptr``), shown to a device's own array module through its array interface: the views,
and the size CuPy gives the memory of an array made over one."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["interface_bytes", "CudaInterfaceView", "HostInterfaceView"]


def interface_bytes(shape: tuple, strides: tuple | None, itemsize: int) -> int:
    """The size CuPy gives the memory of an array it makes over an object's
    ``__cuda_array_interface__`` (its ``UnownedMemory``: core.pyx,
    ``_convert_object_with_cuda_array_interface``): the largest ``|extent × stride|`` of
    its axes where strides are given, else the contiguous size. That is not the bytes the
    view reaches (less with zero or overlapping strides, more with wide ones, counted
    forward of a negative-strided view): it is reported as CuPy reports it
    (:meth:`Device.data_span`), never trusted as a bound (:meth:`Device.memory_span`)."""
    if strides is None:
        return int(np.prod(shape, dtype=np.int64)) * itemsize
    return max((abs(n * s) for n, s in zip(shape, strides)), default=0)


class _InterfaceView:
    """Session memory named by address, shown to the device's own array module through
    its array interface; holds the array that owns the memory so that it outlives the view
    (and whatever the module builds on it)."""

    __slots__ = ("owner", "_desc", "pointed")

    def __init__(self, owner: Any, ptr: int, shape: tuple, dtype: np.dtype, strides: tuple,
                 pointed: bool = False) -> None:
        self.owner = owner
        #: made by ``cupy.ndarray(memptr=p)``: an array over it reports the owner's
        #: allocation as its memory (``.data.mem``), as CuPy's keeps *p*'s
        self.pointed = pointed
        self._desc = {"shape": shape, "typestr": dtype.str, "descr": dtype.descr,
                      "strides": strides, "data": (ptr, False), "version": self.version}


class CudaInterfaceView(_InterfaceView):
    """A CuPy device's view: ``__cuda_array_interface__`` (version 2: no stream to wait on,
    the session's work runs in issue order on one stream)."""

    __slots__ = ()
    version = 2

    @property
    def __cuda_array_interface__(self) -> dict:
        return self._desc


class HostInterfaceView(_InterfaceView):
    """The NumPy device's view: ``__array_interface__``."""

    __slots__ = ()
    version = 3

    @property
    def __array_interface__(self) -> dict:
        return self._desc
