"""cuFFT plans, stood in for on the NumPy device.

A GPU session makes a real cuFFT plan (``cupyx.scipy.fftpack.get_fft_plan``) and
passes it to the FFT functions or makes it current with ``with plan:``. NumPy and
SciPy have no plans; this stand-in accepts the same arguments and is accepted where
a plan is, so the NumPy device answers the same ops (the transform is SciPy's own).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["HostFFTPlan", "Plan1d", "PlanNd", "make_plan", "accepting_plans"]

_VALUE_TYPES = ("C2C", "R2C", "C2R")


class HostFFTPlan:
    """What ``get_fft_plan(a, shape, axes, value_type)`` was asked for."""

    def __init__(self, a: Any, shape: Any = None, axes: Any = None, value_type: str = "C2C") -> None:
        if value_type not in _VALUE_TYPES:
            raise ValueError(f"value_type must be one of {', '.join(_VALUE_TYPES)}")
        self.shape, self.axes, self.value_type = shape, axes, value_type
        self.input_shape = tuple(a.shape)

    def __enter__(self) -> "HostFFTPlan":
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        return None


class Plan1d(HostFFTPlan):
    """A plan over one axis (CuPy's ``Plan1d``)."""


class PlanNd(HostFFTPlan):
    """A plan over several axes (CuPy's ``PlanNd``)."""


def make_plan(a: Any, shape: Any = None, axes: Any = None, value_type: str = "C2C") -> HostFFTPlan:
    """``get_fft_plan``'s stand-in: one axis makes a 1-d plan, several an N-d one."""
    count = (a.ndim if shape is None else len(shape) if hasattr(shape, "__len__") else 1) \
        if axes is None else (len(axes) if hasattr(axes, "__len__") else 1)
    return (Plan1d if count <= 1 else PlanNd)(a, shape, axes, value_type)


def accepting_plans(fn: Callable) -> Callable:
    """*fn* (SciPy's transform) taking CuPy's ``plan=`` keyword: a stand-in plan is
    accepted and set aside (SciPy refuses any plan)."""

    def transform(*args: Any, plan: Any = None, **kwargs: Any) -> Any:
        if plan is not None and not isinstance(plan, HostFFTPlan):
            raise TypeError("plan must be a plan made by get_fft_plan")
        return fn(*args, **kwargs)

    transform.__name__ = getattr(fn, "__name__", "transform")
    return transform
