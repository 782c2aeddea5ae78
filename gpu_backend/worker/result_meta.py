"""What a batch's reply says of the arrays its ops made: each one's handle, shape, dtype,
strides and flags (the client's ``ArrayMetadata`` reads them), encoded once per reply.

Kept apart from the executor's op loop (worker/executor.py), which calls these for the
arrays the table still holds at a batch's end, and at once for the shared path's results.
"""

from __future__ import annotations

from typing import Any

import msgpack
import zmq

from ..protocol import codec
from ..protocol.framing import ReceivedBytes

__all__ = ["add_metas", "array_meta", "is_bunch", "pack_metas"]

#: The reply's ``m``: the metadata entries, packed apart (the client reads them first).
pack_metas = msgpack.Packer(use_bin_type=True, autoreset=True).pack

#: What an uploaded array's memory can be: the frame it arrived in, or bytes.
_RECEIVED_BUFFERS = frozenset({zmq.Frame, bytes, bytearray, memoryview, ReceivedBytes})

#: Each dtype's wire form (``codec.dtype_spec``), as results meet them.
_DTYPE_SPECS: dict = {}


def add_metas(metas: list, fresh: dict, arrays: dict) -> None:
    """The metadata of the batch's new arrays that the table still holds. In a chain of
    ops (``x = x + 1`` in a loop) the client drops each result one op later, so its free
    record follows in the same batch: no metadata goes out, and neither side spends the
    microseconds that an array's shape, strides, dtype and flags cost to read and encode."""
    for hid, array in fresh.items():
        if arrays.get(hid) is array:
            metas.append(array_meta(hid, array))


def array_meta(hid: int, a: Any) -> list:
    """One array's entry: [handle, shape, dtype spec, strides, flags]."""
    f = a.flags
    # an array wrapping a received frame (its base is that buffer) owns its data
    own = f.owndata or type(a.base) in _RECEIVED_BUFFERS
    dt = a.dtype
    spec = _DTYPE_SPECS.get(dt)
    if spec is None:   # (a dict lookup: cheaper than dtype.str, which builds a string)
        spec = codec.dtype_spec(dt)
        if dt.fields is None:   # numbers only: a client could make structures without end
            _DTYPE_SPECS[dt] = spec
    return [hid, a.shape, spec, a.strides,
            f.c_contiguous | (f.f_contiguous << 1) | (own << 2)]


def is_bunch(result: Any) -> bool:
    """CuPy's (and SciPy's) ``Bunch``: a plain object of fields that some functions return
    (its fields go out as a map)."""
    cls = type(result)
    return cls.__name__ == "Bunch" and cls.__module__.startswith(("cupyx.scipy.", "scipy."))
