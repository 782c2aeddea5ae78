"""The client's state that every proxy reads: the active session, this thread's current
device and stream, and the proxy modules once built.

Everything in ``kernelproxy`` issues ops on "the active session" (``kernelproxy.install``
picks it), on the device that is current in the calling thread (``cupy.cuda.Device(k)``),
and some helpers answer through the proxy ``cupy`` module itself. That state lives here, at
the bottom of the package, so that the modules which use it need not import the top one
that builds the ``cupy`` namespace (:mod:`kernelproxy.modules`, which registers its builder
here when it is imported, as ``kernelproxy`` itself does).
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING, Any, Callable

from gpu_backend.protocol.errors import CUDAError, SessionLostError

if TYPE_CHECKING:
    from .session import Session

__all__ = ["activate", "deactivate", "primary_session", "active_session", "current_session_of",
           "device_count", "current_device",
           "current", "register_namespace", "namespace", "proxy_cupy", "INVALID_DEVICE"]

#: ``cudaErrorInvalidDevice``, as CuPy's CUDARuntimeError reports it
INVALID_DEVICE = "cudaErrorInvalidDevice: invalid device ordinal"

_active: list["Session"] = []


def activate(session: "Session") -> None:
    """Make *session* (device 0's, for a client of several devices) the one the proxy
    modules issue ops on."""
    _active[:] = [session]


def primary_session() -> "Session":
    """The active client's session of device 0 (its only one, unless it holds several)."""
    if _active and _active[0].closed and getattr(_active[0], "lost_reason", None):
        raise SessionLostError(f"the remote GPU session was lost: {_active[0].lost_reason}")
    if not _active or _active[0].closed:
        raise SessionLostError("no remote GPU session is active; call kernelproxy.install(session)")
    return _active[0]


def active_session() -> "Session":
    """The session of this thread's current device (``cupy.cuda.Device``)."""
    return current_session_of(primary_session())


def current_session_of(session: "Session") -> "Session":
    """The session of the current device in *session*'s group (*session* itself if it
    holds the client's only device)."""
    group = session.group
    return session if group is None else group[current_device(len(group))]


def deactivate() -> None:
    """No session is active any more (``kernelproxy.uninstall``)."""
    _active.clear()


def device_count() -> int:
    """The active client's devices: its session's one, or each of its group's."""
    group = _active[0].group if _active else None
    return 1 if group is None else len(group)


class _Current(threading.local):
    """The current device and stream, per thread as in CuPy (``cupy.cuda`` sets them)."""

    def __init__(self) -> None:
        self.device = 0
        self.stream: Any = None


#: this thread's current device (an index into the client's devices) and stream
current = _Current()


def current_device(count: int) -> int:
    """This thread's current device, for a client of *count* devices (an index beyond them,
    left from a client that held more, is CUDA's invalid-device error)."""
    index = current.device
    if index >= count:
        raise CUDAError(INVALID_DEVICE)
    return index


_builder: list[Callable[[], dict[str, types.ModuleType]]] = []


def register_namespace(builder: Callable[[], dict[str, types.ModuleType]]) -> None:
    """The function that builds (once) the proxy modules by import name."""
    _builder[:] = [builder]


def namespace() -> dict[str, types.ModuleType]:
    """The proxy modules by import name (``"cupy"``, ``"cupyx.scipy.fft"``, ...)."""
    if not _builder:   # (importing kernelproxy registers it: kernelproxy.modules)
        raise RuntimeError("the proxy modules are not built: import kernelproxy first")
    return _builder[0]()


def proxy_cupy() -> types.ModuleType:
    """The proxy ``cupy`` module (for client-side helpers written over its functions)."""
    return namespace()["cupy"]
