"""cuFFT plans made in the session's worker: ``get_fft_plan`` and ``cupy.cuda.cufft``.

``cupyx.scipy.fft.get_fft_plan(a, shape, axes, value_type)`` makes the plan in the
pool (one queued op); the plan is passed to the FFT functions as ``plan=`` (it
travels as a handle) or made current with ``with plan:``, which the worker enters
and leaves in op order, so exactly the FFTs issued inside the block use it, as in
CuPy. ``cupy.cuda.cufft.get_current_plan()`` is answered here, per thread.
"""

from __future__ import annotations

import threading
import types
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .remote_object import RemoteObject
from .state import active_session

__all__ = ["FFTPlan", "Plan1d", "PlanNd", "XtPlanNd", "get_fft_plan", "get_current_plan",
           "getVersion", "build_cufft_module"]

_current = threading.local()


class FFTPlan(RemoteObject, remote="cufft.Plan"):
    """A cuFFT plan (CuPy's ``Plan1d`` or ``PlanNd``) in the session's worker."""

    def __init__(self, a: Any, shape: Any = None, axes: Any = None, value_type: str = "C2C") -> None:
        self.value_type = value_type
        kind = self._create((a, shape, axes, value_type), {}, wait=True)
        # the kind CuPy chose (by its rule, in the worker): isinstance(plan, cufft.Plan1d)
        self.__class__ = _KINDS.get(kind, FFTPlan)

    def __enter__(self) -> "FFTPlan":
        self._call("__enter__")
        _current.plan = self
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _current.plan = None
        self._call("__exit__", None, None, None)


class Plan1d(FFTPlan):
    """A one-dimensional cuFFT plan (batched over the other axes)."""


class PlanNd(FFTPlan):
    """An N-dimensional cuFFT plan."""


class XtPlanNd(FFTPlan):
    """An N-dimensional cuFFT plan of cuFFT's extended API."""


_KINDS = {"Plan1d": Plan1d, "PlanNd": PlanNd, "XtPlanNd": XtPlanNd}


def get_fft_plan(a: Any, shape: Any = None, axes: Any = None, value_type: str = "C2C") -> FFTPlan:
    """``cupyx.scipy.fftpack.get_fft_plan``: a cuFFT plan for transforms of arrays like *a*."""
    return FFTPlan(a, shape, axes, value_type)


def get_current_plan() -> FFTPlan | None:
    """The plan of the innermost ``with plan:`` block of this thread, if any."""
    return getattr(_current, "plan", None)


class CuFFTError(RuntimeError):
    """cuFFT's errors (raised by the pool under this name)."""


def getVersion() -> int:
    """``cupy.cuda.cufft.getVersion()``: the pool's cuFFT (asked once per session)."""
    session = active_session()
    version = getattr(session, "_cufft_version", None)
    if version is None:
        version = session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "fft.version", None,
                                               [], label="cupy.cuda.cufft.getVersion"))
        session._cufft_version = version
    return version


def build_cufft_module(forwarding: type) -> types.ModuleType:
    """``cupy.cuda.cufft`` as a *forwarding* module (other names: not forwarded)."""
    module = forwarding("cupy.cuda.cufft")
    module.__dict__.update(get_current_plan=get_current_plan, CuFFTError=CuFFTError,
                           Plan1d=Plan1d, PlanNd=PlanNd, XtPlanNd=XtPlanNd, getVersion=getVersion)
    return module
