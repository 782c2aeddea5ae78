"""Exceptions and warnings that cross the wire, by name.

The server reports an exception as the name of the nearest class in
:data:`ERROR_CLASSES` along its MRO, and the client raises that class. The
table is closed: a peer's name that is not in it becomes :class:`RemoteError`.
"""

from __future__ import annotations

import numpy.exceptions as npx
import numpy.linalg

__all__ = [
    "ERROR_CLASSES",
    "WARNING_CLASSES",
    "PoolError",
    "ProtocolError",
    "AuthenticationError",
    "SignInThrottledError",
    "VersionMismatchError",
    "NotAllowedError",
    "InvalidHandleError",
    "SessionLostError",
    "QuotaExceededError",
    "RemoteError",
    "OutOfMemoryError",
    "CUDAError",
    "PerformanceWarning",
    "BadCoefficients",
    "sparse_warning",
    "error_name",
    "error_class",
    "warning_name",
    "warning_class",
]


class PoolError(Exception):
    """Base of the errors that the pool itself raises (not the array library)."""


class ProtocolError(PoolError):
    """A message was malformed, truncated or of an unknown kind."""


class AuthenticationError(PoolError, PermissionError):
    """The token was missing or wrong, or the pool failed the encryption handshake (its pinned
    key, or encryption itself, did not match)."""


class SignInThrottledError(AuthenticationError):
    """The pool refused to check a token now (failed sign-ins for this user or from this
    address are backing off, or too many are being checked): try again after
    ``retry_after`` seconds. Clients do so themselves within their hello's timeout."""

    retry_after: float = 0.0


class VersionMismatchError(ProtocolError):
    """Client and pool speak different protocol versions."""


class NotAllowedError(PoolError, PermissionError):
    """The op names something that is not on the pool's allow-list."""


class InvalidHandleError(PoolError, KeyError):
    """The op names an array this session does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SessionLostError(PoolError, ConnectionError):
    """The session's worker or the pool went away."""


class QuotaExceededError(PoolError):
    """A user's quota (sessions at once) would be exceeded; the text names the quota.

    Device memory over a user's quota is CuPy's ``OutOfMemoryError`` instead, as it
    would be on a GPU of that size."""


class RemoteError(PoolError):
    """An exception whose class the pool could not name."""


class OutOfMemoryError(MemoryError):
    """The session's device memory limit was reached (``cupy.cuda.memory.OutOfMemoryError``)."""


class CUDAError(RuntimeError):
    """A CUDA driver, runtime or library error on the device."""


class PerformanceWarning(RuntimeWarning):
    """CuPy's warning that a call takes a slow path (``cupy._util.PerformanceWarning``)."""


ERROR_CLASSES: dict[str, type[BaseException]] = {
    cls.__name__: cls
    for cls in (
        ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError,
        ArithmeticError, FloatingPointError, NotImplementedError, RuntimeError,
        AttributeError, LookupError, MemoryError, AssertionError, RecursionError,
        UnicodeError, BufferError, StopIteration, KeyboardInterrupt,
        PoolError, ProtocolError, AuthenticationError, SignInThrottledError, VersionMismatchError,
        NotAllowedError, InvalidHandleError, SessionLostError, QuotaExceededError,
        OutOfMemoryError, CUDAError,
    )
}
ERROR_CLASSES.update(
    {
        "AxisError": npx.AxisError,
        "DTypePromotionError": npx.DTypePromotionError,
        "TooHardError": npx.TooHardError,
        "LinAlgError": numpy.linalg.LinAlgError,
    }
)

class BadCoefficients(UserWarning):
    """``cupyx.scipy.signal.BadCoefficients``: filter coefficients badly conditioned (CuPy's
    and SciPy's of that name travel as this one)."""


class _SparseWarning(Warning):
    """CuPy's ``SparseWarning`` where SciPy is missing (CuPy's is SciPy's otherwise)."""


class _SparseEfficiencyWarning(_SparseWarning):
    """CuPy's ``SparseEfficiencyWarning`` where SciPy is missing."""


_SPARSE_WARNINGS = {"SparseWarning": _SparseWarning,
                    "SparseEfficiencyWarning": _SparseEfficiencyWarning}


def sparse_warning(name: str) -> type[Warning]:
    """``cupyx.scipy.sparse``'s warning class *name*: SciPy's, as CuPy's is, when SciPy is
    installed here (imported only now: a sparse warning is rare, SciPy's import is not
    free), else one of ours. A filter on ``scipy.sparse.SparseEfficiencyWarning`` then
    catches the pool's, as it catches local CuPy's."""
    try:
        import scipy.sparse
    except ImportError:
        return _SPARSE_WARNINGS[name]
    return getattr(scipy.sparse, name)


WARNING_CLASSES: dict[str, type[Warning]] = {
    cls.__name__: cls
    for cls in (
        Warning, UserWarning, RuntimeWarning, DeprecationWarning, FutureWarning,
        PendingDeprecationWarning, npx.ComplexWarning, npx.VisibleDeprecationWarning,
        npx.RankWarning, PerformanceWarning, BadCoefficients,
    )
}
#: CuPy's own error classes travel as ours (its CUDA errors as CUDAError).
_CLASS_ALIASES = {
    "OutOfMemoryError": "OutOfMemoryError",
    "CUDADriverError": "CUDAError",
    "CUDARuntimeError": "CUDAError",
    "CUBLASError": "CUDAError",
    "CUSOLVERError": "CUDAError",
    "CUFFTError": "CUDAError",
    "CURANDError": "CUDAError",
    "CUSPARSEError": "CUDAError",
    "NVRTCError": "CUDAError",
    "CompileException": "CUDAError",
    "PerformanceWarning": "PerformanceWarning",
    "BadCoefficients": "BadCoefficients",
    "SparseWarning": "SparseWarning",
    "SparseEfficiencyWarning": "SparseEfficiencyWarning",
}


def _nearest_name(cls: type, known: dict[str, type], fallback: str) -> str:
    """The first class along *cls*'s MRO that the other side knows, by name."""
    for klass in cls.__mro__:
        alias = _CLASS_ALIASES.get(klass.__name__)
        if alias is not None:
            return alias
        if known.get(klass.__name__) is klass:
            return klass.__name__
    return fallback


def error_name(exc: BaseException) -> str:
    """Name the nearest class of *exc* that the client knows."""
    return _nearest_name(type(exc), ERROR_CLASSES, "RemoteError")


def error_class(name: object) -> type[BaseException]:
    """The class to raise for a name received from the pool."""
    cls = ERROR_CLASSES.get(name) if isinstance(name, str) else None
    return cls if cls is not None else RemoteError


def warning_name(category: type[Warning]) -> str:
    return _nearest_name(category, WARNING_CLASSES, "UserWarning")


def warning_class(name: object) -> type[Warning]:
    if not isinstance(name, str):
        return UserWarning
    if name in _SPARSE_WARNINGS:
        return sparse_warning(name)
    return WARNING_CLASSES.get(name, UserWarning)
