"""A 0-d array's value read back for ``float()``, ``int()``, ``bool()`` and ``complex()``
on the GPU: through a small pinned buffer of the worker's own, one copy and a wait on the
session's stream, then the conversion of a NumPy 0-d array of the same dtype, as CuPy's
own ``float(x)`` (``float(x.get())``) converts it: the same value, the same warnings.

Why: every loop that reads a scalar (a loss, a norm, the hot sync ``float((x + 1).sum())``)
ends its batch with such a read, and CuPy's ``get()`` (a new host array, its copy, its
stream's wait) cost 10-15 µs of the worker's time on an H200 host, a tenth of a held
stretch's replay. Anything else (an array of more dimensions, a read while the client
captures a CUDA graph) goes through the builtin, as before.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["scalar_reads", "CONVERSIONS", "MOST_BYTES"]

#: the widest scalar a read copies (complex128)
MOST_BYTES = 16
#: the conversions read so: each operator's name and the builtin that converts the NumPy 0-d
#: array of the value's dtype (worker/lane_reads.py serves the same ones by a read graph)
CONVERSIONS = {"float": float, "int": int, "bool": bool, "complex": complex}


def scalar_reads(cupy: Any, stream: Any, captures: Any) -> dict[str, Callable[[Any], Any]]:
    """The operators ``float``, ``int``, ``bool`` and ``complex`` of a CuPy device whose ops
    run on *stream* (its session's), *captures* telling whether its client captures."""
    runtime = cupy.cuda.runtime
    array_type = cupy.ndarray
    pinned = cupy.cuda.alloc_pinned_memory(MOST_BYTES)
    host = np.frombuffer(pinned, np.uint8, MOST_BYTES)
    host_ptr = host.ctypes.data
    stream_ptr = stream.ptr
    to_host = runtime.memcpyDeviceToHost

    def reading(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def read(a: Any) -> Any:
            if type(a) is not array_type or a.ndim or captures.active is not None:
                return convert(a)
            dtype = a.dtype
            size = dtype.itemsize
            if size > MOST_BYTES or dtype.kind not in "biufc":
                return convert(a)
            runtime.memcpyAsync(host_ptr, a.data.ptr, size, to_host, stream_ptr)
            runtime.streamSynchronize(stream_ptr)   # (an op's asynchronous error surfaces here)
            return convert(host[:size].view(dtype).reshape(()))
        return read

    return {name: reading(convert) for name, convert in CONVERSIONS.items()}
