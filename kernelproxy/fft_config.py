"""``cupy.fft.config``: CuPy's FFT switches, as seen from the client.

``enable_nd_planning`` (deprecated in CuPy 14, with CuPy's DeprecationWarning) is
sent to the session's worker, whose CuPy then plans N-d transforms accordingly; the
value is also kept here, so reading it costs no round trip. Plan caches, cuFFT
callbacks and multi-GPU transforms belong to the pool's process: asking for them is
a NotImplementedError that says so.
"""

from __future__ import annotations

import contextvars
import types
import warnings
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

__all__ = ["FFTConfigModule"]

_DEPRECATED = "enable_nd_planning is deprecated as of CuPy 14 and will always be True in the future."


def _in_the_pool(what: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"cupy.fft.config.{what}: cuFFT {'plan caches' if 'cache' in what else 'settings of this kind'} "
                                  "live in the pool's process, not on gpu-workbench's client")
    refuse.__name__ = what
    return refuse


class FFTConfigModule(types.ModuleType):
    """The ``cupy.fft.config`` module object."""

    def __init__(self) -> None:
        super().__init__("cupy.fft.config")
        self.__dict__.update(
            # CuPy keeps these two as context variables; one GPU per session here
            _nd_planning=True, use_multi_gpus=False,
            _use_multi_gpus=contextvars.ContextVar("cupy.fft.config.use_multi_gpus", default=False),
            _devices=contextvars.ContextVar("cupy.fft.config.devices", default=None),
            **{name: _in_the_pool(name) for name in (
                "get_plan_cache", "clear_plan_cache", "show_plan_cache_info",
                "set_plan_cache_size", "get_plan_cache_size", "set_plan_cache_max_memsize",
                "get_plan_cache_max_memsize", "set_cufft_callbacks", "set_cufft_gpus")})

    @property
    def enable_nd_planning(self) -> bool:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self.__dict__["_nd_planning"]

    @enable_nd_planning.setter
    def enable_nd_planning(self, value: Any) -> None:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        from .modules import active_session
        active_session().submit(m.KIND_CUDA, api.NONE, None, "fft.nd_planning", None, [bool(value)],
                                label="cupy.fft.config.enable_nd_planning")
        self.__dict__["_nd_planning"] = bool(value)
