"""Host arrays uploaded to a session's device, and arrays moved between the client's devices.

``cupy.asarray(host)``, ``cupy.array(host)`` and a ``cupy.ndarray`` copied to another of the
client's devices (kernelproxy.device_group) all come down to an upload: one zero-copy
frame (or a stream of chunks) into a handle the client names itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .issue import call, wrap

__all__ = ["upload", "upload_array", "move_array"]


def upload(session: Any, host: np.ndarray) -> tuple[Any, bool]:
    """Upload *host*; one that is F- but not C-contiguous stays F-ordered, as in CuPy.

    Returns the remote array and whether it is the freshly uploaded buffer
    itself (False: an F-ordered copy made on the device).
    """
    fortran = host.ndim > 1 and host.flags.f_contiguous and not host.flags.c_contiguous
    fresh = wrap(session, session.new_id())
    sent = host.T if fortran else host   # (host.T is C-contiguous: no copy)
    session.upload(sent, fresh._h)
    if fresh._m is None:
        fresh._m = uploaded_meta(sent)   # (known here: a stretch may take it as an input)
    if session.blocking:   # (each op waits for its reply: an upload's error is raised here,
        session.sync()     # as during a capture, where CuPy refuses host-to-device copies)
    if not fortran:
        return fresh, True
    view = call(session, m.KIND_FUNCTION, "transpose", api.ARRAY, None, (fresh,), {},
                "cupy.asarray")
    return call(session, m.KIND_FUNCTION, "array", api.ARRAY, None, (view,), {"order": "F"},
                "cupy.asarray"), False


def uploaded_meta(host: np.ndarray) -> tuple | None:
    """The metadata of *host*, a C-contiguous array of numbers, once uploaded: its shape and
    dtype, C strides, its own memory (what the worker's reply will say; known at once, so
    that a held stretch that begins with it is answered from its template: no round trip)."""
    if host.dtype.kind not in "biufc" or not host.dtype.isnative or host.size == 0:
        return None   # (an empty array's strides are the device's own to choose)
    like = np.empty(host.shape, host.dtype)
    flags = like.flags
    return (tuple(like.shape), like.dtype, tuple(like.strides),
            flags.c_contiguous | (flags.f_contiguous << 1) | 4)


def upload_array(session: Any, host: np.ndarray) -> Any:
    """*host* uploaded to *session*'s device, a new array in its layout."""
    return upload(session, host)[0]


def move_array(array: Any, target: Any, order: str = "C") -> Any:
    """A copy of *array* (a device of the same client) on *target*'s device, in *order*
    (``C``, ``F``, ``A`` or ``K`` as ``ndarray.copy`` takes it)."""
    if order not in ("C", "c", "F", "f", "A", "a", "K", "k"):
        raise ValueError(f"order not understood: {order!r}")
    host = array.get()
    fortran = order in ("F", "f") or (order not in ("C", "c") and host.flags.f_contiguous
                                      and not host.flags.c_contiguous)
    return upload_array(target, np.asfortranarray(host) if fortran else np.ascontiguousarray(host))
