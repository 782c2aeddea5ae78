"""A session's arrays, by handle id.

Clients choose positive ids for the arrays their ops create (so they need
not wait for an answer); the worker numbers the arrays it hands back inside
structured results (``split``, ``unique(return_counts=True)``, ...) with
negative ids. A handle names an array of this session only: each worker
process holds exactly one session's table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..devices import Device
from ..protocol.codec import Handle, device_dtype, unsupported_dtype
from ..protocol.errors import InvalidHandleError, ProtocolError

__all__ = ["HandleTable"]


class HandleTable:
    def __init__(self, device: Device) -> None:
        self.device = device
        self.arrays: dict[int, Any] = {}
        #: the session's other remote objects (CUDA events, ...), in the same id space so
        #: that a client drops them the way it drops arrays (a bare id in the op stream)
        self.objects: dict[int, Any] = {}
        self._tracks = device.tracks_memory
        #: while the session is swapped out (worker/swap.py), its arrays' places by handle:
        #: a free then forgets the array there
        self.swapped: dict | None = None
        self._next_server_id = -1

    def get(self, hid: int) -> Any:
        """The array, or else the remote object (a RandomState passed to a Generator), *hid*."""
        try:
            return self.arrays[hid]
        except KeyError:
            obj = self.objects.get(hid)
            if obj is None:
                raise InvalidHandleError(f"this session has no array with handle {hid}") from None
            return obj

    def put(self, hid: Any, array: Any) -> None:
        """Store a result under the id the client chose for it."""
        if type(hid) is not int or hid <= 0:
            raise ProtocolError(f"bad result handle {hid!r}: clients use positive integers")
        _check_dtype(array)
        if self._tracks:
            self.device.track(array)  # may raise OutOfMemoryError: then nothing is stored
        old = self.arrays.get(hid)
        self.arrays[hid] = array
        if old is not None and self._tracks:
            self.device.untrack(old)

    def put_any(self, hid: int, array: Any) -> None:
        """Store *array* under *hid*, a client's or the worker's own id (an array brought
        back from swap, worker/swap.py, under the id it had)."""
        if self._tracks:
            self.device.track(array)
        old = self.arrays.get(hid)
        self.arrays[hid] = array
        if old is not None and self._tracks:
            self.device.untrack(old)

    def put_new(self, array: Any) -> int:
        """Store an array the worker numbers itself; returns its (negative) id."""
        _check_dtype(array)
        if self._tracks:
            self.device.track(array)
        hid = self._next_server_id
        self._next_server_id -= 1
        self.arrays[hid] = array
        return hid

    def rename(self, old: int, new: int) -> Any:
        """Move the array stored under the worker's own *old* to the client's *new* (a
        replay run ahead, its results kept under provisional ids until the client names
        them: worker/run_ahead.py); the array, or None where *old* holds none."""
        array = self.arrays.pop(old, None)
        if array is not None:
            if type(new) is not int or new <= 0:
                self.arrays[old] = array
                raise ProtocolError(f"bad result handle {new!r}: clients use positive integers")
            if new in self.arrays:
                self.free(new)
            self.arrays[new] = array
        return array

    def free(self, hid: Any) -> None:
        array = self.arrays.pop(hid, None) if type(hid) is int else None
        if array is not None:
            if self._tracks:
                self.device.untrack(array)
            return
        if self.swapped is not None:
            self.swapped.pop(hid, None)
        if self.objects:
            self.objects.pop(hid, None)

    def put_object(self, hid: Any, obj: Any) -> None:
        """Store a non-array object (a CUDA event, a random generator) under the id the
        client chose for it."""
        if type(hid) is not int or hid <= 0:
            raise ProtocolError(f"bad result handle {hid!r}: clients use positive integers")
        self.free(hid)
        self.objects[hid] = obj

    def get_object(self, hid: Any, kind: type | tuple) -> Any:
        """The object under *hid*, which must be a *kind*."""
        obj = self.objects.get(hid) if type(hid) is int else None
        if obj is None or not isinstance(obj, kind):
            raise InvalidHandleError(f"this session has no such object with handle {hid!r}")
        return obj

    def view_at(self, ptr: int, shape: tuple, dtype: np.dtype, strides: tuple | None,
                pointed: bool = False) -> Any:
        """Memory named by address (a ``__cuda_array_interface__`` the client passed), as an
        object with the device's array interface that keeps its owner alive. *pointed*: made
        by ``cupy.ndarray(memptr=p)``, whose array keeps the owner's memory as its own
        (``.data.mem`` is the allocation, not memory sized from the view).

        The whole extent must lie inside one allocation of this session's own arrays: an
        address is never trusted on its own, so a client reaches nothing it does not hold.
        """
        itemsize = dtype.itemsize
        given = strides   # (the view keeps what was given: CuPy sizes a 0-d view with
        if strides is None:   # strides () as 0 bytes, with none as one item); C order
            strides, step = [], itemsize
            for n in reversed(shape):
                strides.insert(0, step)
                step *= max(n, 1)
            strides = tuple(strides)
        if math.prod(shape) == 0:   # no memory: CuPy then asks for no strides and no pointer
            return self.device.interface_view(None, 0, shape, dtype, None)
        low = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        high = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + itemsize
        for array in self.arrays.values():
            _, start, size = self.device.memory_span(array)
            if start <= low and high <= start + size:
                return self.device.interface_view(array, ptr, shape, dtype, given, pointed)
        raise InvalidHandleError(
            f"this session holds no memory at 0x{ptr:x} ({high - low} bytes): a "
            "__cuda_array_interface__ sent to the pool must describe memory of the session's "
            "own arrays (such as another array's .data.ptr); memory of this machine's GPU "
            "cannot be reached from the pool")

    def base_of(self, hid: Any) -> Any:
        """``ndarray.base`` of the array *hid*: the :class:`Handle` of the session's array
        whose memory it views, that array itself when the client no longer holds it (the
        caller stores it under a new id), or None."""
        base = self.device.base_of(self.get(hid))
        if base is None:
            return None
        for other, array in self.arrays.items():
            if array is base:
                return Handle(other)
        return base

    def clear(self) -> None:
        for hid in list(self.arrays):
            self.free(hid)
        self.objects.clear()

    def __len__(self) -> int:
        return len(self.arrays)


def _check_dtype(array: Any) -> None:
    """Device arrays are numeric, or structures of numbers (as in CuPy): no str, object or
    datetime arrays."""
    if not device_dtype(array.dtype):
        raise unsupported_dtype(array.dtype)
