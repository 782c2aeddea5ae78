"""The client: CuPy code that runs on a remote GPU pool.

    >>> import kernelproxy
    >>> with kernelproxy.connect("tcp://gpu-host:5555", token) as session:
    ...     kernelproxy.install(session)
    ...     import cupy as cp      # the proxy: every op runs in the pool

The session ends with the block, or with the process (kernelproxy.lifetime).

Works in any Python process; the Jupyter kernel in :mod:`workbench` uses it.
"""

from gpu_backend.protocol.errors import (AuthenticationError, InvalidHandleError, NotAllowedError,
                                         OutOfMemoryError, PoolError, ProtocolError, QuotaExceededError,
                                         RemoteError, SessionLostError, SignInThrottledError,
                                         VersionMismatchError)

from .importhook import install, installed, uninstall
from .ndarray import ndarray
from .session import Session, connect

__all__ = [
    "connect", "install", "uninstall", "installed", "Session", "ndarray",
    "PoolError", "ProtocolError", "AuthenticationError", "SignInThrottledError", "VersionMismatchError",
    "NotAllowedError", "InvalidHandleError", "SessionLostError", "QuotaExceededError", "RemoteError",
    "OutOfMemoryError",
]
