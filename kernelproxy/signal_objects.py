"""``cupyx.scipy.signal``'s objects, made and kept in the session's worker.

Linear time-invariant systems (``lti``, ``dlti``, ``TransferFunction``,
``ZerosPolesGain``, ``StateSpace``) and chirp z-transforms (``CZT``, ``ZoomFFT``) are
Python objects of CuPy's that hold arrays; here each is a :class:`RemoteObject`: the
worker builds CuPy's own from the arguments and its methods run there.

A system's class is CuPy's choice (``lti([1], [1, 1])`` is a
``TransferFunctionContinuous``): the worker answers the name of the type it built and
the client takes the class of that name here, which mirrors CuPy's hierarchy, so that
``isinstance(s, signal.dlti)`` answers as in CuPy. Its fields (``num``, ``poles``,
``A``, ``dt``, ...) are read from the worker on each access and set there; conversions
and a state-space system's arithmetic give new systems in the worker. A system is
passed to ``bode``, ``lsim``, ``dimpulse`` and the rest as a handle.
"""

from __future__ import annotations

from typing import Any

from gpu_backend.protocol import api

from .remote_object import RemoteObject, remote_attribute
from .state import proxy_cupy

__all__ = ["LinearTimeInvariant", "lti", "dlti", "TransferFunction", "ZerosPolesGain",
           "StateSpace", "CZT", "ZoomFFT", "SIGNAL_OBJECTS"]


class LinearTimeInvariant(RemoteObject):
    """A linear time-invariant system of the session's worker (CuPy's base class: not
    made directly, as in CuPy)."""

    def __new__(cls, *system: Any, **kwargs: Any) -> "LinearTimeInvariant":
        if not cls._remote_class:
            raise NotImplementedError("The LinearTimeInvariant class is not meant to be used "
                                      "directly, use `lti` or `dlti` instead.")
        obj = super().__new__(cls)
        kind = obj._create(system, kwargs, wait=True)
        obj.__class__ = _SYSTEMS.get(kind, cls)
        return obj

    def _adopt(self, hid: int, kind: str) -> "LinearTimeInvariant":
        return _SYSTEMS.get(kind, LinearTimeInvariant)._of(self._s, hid)

    def __repr__(self) -> str:
        return self._call("__repr__")

    def __copy__(self) -> "LinearTimeInvariant":
        """A copy made in the pool (CuPy's conversion to the system's own kind copies)."""
        for kind, convert in ((TransferFunction, "to_tf"), (ZerosPolesGain, "to_zpk"),
                              (StateSpace, "to_ss")):
            if isinstance(self, kind):
                return self._call(convert)
        raise TypeError(f"cannot copy a {type(self).__name__}")

    def __deepcopy__(self, memo: dict) -> "LinearTimeInvariant":
        return self.__copy__()

    def __reduce__(self):
        raise TypeError("a signal system lives in the GPU pool and cannot be pickled; pickle "
                        "its arrays (num and den, zeros/poles/gain, or A, B, C, D) instead")


_LTI_SETTABLE = api.OBJECT_SETTERS["signal.lti"]
for _name in sorted(api.OBJECT_GETTERS["signal.lti"]):
    setattr(LinearTimeInvariant, _name, remote_attribute(_name, settable=_name in _LTI_SETTABLE))


class lti(LinearTimeInvariant, remote="signal.lti"):
    """A continuous-time system: ``lti(num, den)``, ``lti(zeros, poles, gain)`` or
    ``lti(A, B, C, D)``."""


class dlti(LinearTimeInvariant, remote="signal.dlti"):
    """A discrete-time system (``dt=``, default True), made as ``lti``'s are."""


class TransferFunction(LinearTimeInvariant, remote="signal.TransferFunction"):
    """A system as ``num / den`` (continuous, or discrete with ``dt=``)."""

    @staticmethod
    def _z_to_zinv(num: Any, den: Any) -> tuple:
        """Coefficients in z made coefficients in 1/z: the shorter one padded in front."""
        return _padded(num, den, front=True)

    @staticmethod
    def _zinv_to_z(num: Any, den: Any) -> tuple:
        """Coefficients in 1/z made coefficients in z: the shorter one padded behind."""
        return _padded(num, den, front=False)


def _padded(num: Any, den: Any, front: bool) -> tuple:
    cp = proxy_cupy()
    diff = len(num) - len(den)
    if diff == 0:
        return num, den
    short, pad = (den, diff) if diff > 0 else (num, -diff)
    zeros = cp.zeros(pad)
    padded = cp.hstack((zeros, short) if front else (short, zeros))
    return (num, padded) if diff > 0 else (padded, den)


class ZerosPolesGain(LinearTimeInvariant, remote="signal.ZerosPolesGain"):
    """A system by its zeros, poles and gain."""


class StateSpace(LinearTimeInvariant, remote="signal.StateSpace"):
    """A system as ``(A, B, C, D)``; with arithmetic (``*``, ``+``, ``-``, ``/`` by a
    system or an array, as CuPy's takes them) done by CuPy in the worker. The other
    kinds of system have none (a TypeError, as in CuPy)."""

    __array_priority__ = 100.0   # CuPy's: an array operand defers to the system
    __array_ufunc__ = None       # (a remote array's operators check this)


class TransferFunctionContinuous(TransferFunction, lti):
    """CuPy's continuous transfer function."""


class TransferFunctionDiscrete(TransferFunction, dlti):
    """CuPy's discrete transfer function."""


class ZerosPolesGainContinuous(ZerosPolesGain, lti):
    """CuPy's continuous zeros-poles-gain system."""


class ZerosPolesGainDiscrete(ZerosPolesGain, dlti):
    """CuPy's discrete zeros-poles-gain system."""


class StateSpaceContinuous(StateSpace, lti):
    """CuPy's continuous state-space system."""


class StateSpaceDiscrete(StateSpace, dlti):
    """CuPy's discrete state-space system."""


#: the client's class for each type name the worker answers
_SYSTEMS: dict[str, type] = {cls.__name__: cls for cls in (
    lti, dlti, TransferFunction, ZerosPolesGain, StateSpace,
    TransferFunctionContinuous, TransferFunctionDiscrete, ZerosPolesGainContinuous,
    ZerosPolesGainDiscrete, StateSpaceContinuous, StateSpaceDiscrete)}


class CZT(RemoteObject, remote="signal.CZT"):
    """A chirp z-transform of a length, made once (its chirps in the pool) and applied to
    arrays: ``CZT(n, m, w, a)(x)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._create(args, kwargs, wait=True)   # CuPy checks the arguments here

    def __call__(self, x: Any, *, axis: int = -1) -> Any:
        return self._call("__call__", x, axis=axis)


class ZoomFFT(CZT, remote="signal.ZoomFFT"):
    """A chirp z-transform over a frequency range: ``ZoomFFT(n, fn, m, fs=...)(x)``."""


#: the names ``cupyx.scipy.signal`` gets from here
SIGNAL_OBJECTS = {cls.__name__: cls for cls in (
    lti, dlti, TransferFunction, ZerosPolesGain, StateSpace, CZT, ZoomFFT)}
