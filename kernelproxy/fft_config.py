"""``cupy.fft.config``: CuPy's FFT switches, as seen from the client.

``enable_nd_planning`` (deprecated in CuPy 14, with CuPy's DeprecationWarning) is
sent to the session's worker, whose CuPy then plans N-d transforms accordingly; the
value is also kept here, so reading it costs no round trip. ``set_cufft_callbacks``
with ``cb_ver="jit"`` sends the callbacks' CUDA sources to the worker, where CuPy
builds them with NVRTC (device code only) and the FFTs issued inside the block use
them; CuPy's *legacy* callbacks are refused (nvcc builds them into a host module the
pool would load). The plan-cache functions (``clear_plan_cache``, its sizes,
``show_plan_cache_info``) act on the session's cache in the pool; the cache object
itself (``get_plan_cache``) and multi-GPU transforms are a NotImplementedError that
says so.
"""

from __future__ import annotations

import contextvars
import types
import warnings
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from .memory import MemoryPointer
from .state import active_session

__all__ = ["FFTConfigModule", "set_cufft_callbacks", "build_callback_module"]

_DEPRECATED = "enable_nd_planning is deprecated as of CuPy 14 and will always be True in the future."


def _in_the_pool(what: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"cupy.fft.config.{what}: cuFFT {'plan caches' if 'cache' in what else 'settings of this kind'} "
                                  "live in the pool's process, not on gpu-workbench's client")
    refuse.__name__ = what
    return refuse


def _plan_cache(operation: str, name: str):
    """One of ``cupy.fft.config``'s plan-cache functions, run on the session's cache in
    the pool (its plans and their work areas live there)."""
    def call(*values: Any) -> Any:
        session = active_session()
        return session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "fft.plan_cache", None,
                                            [operation, *values], label=f"cupy.fft.config.{name}"))
    call.__name__ = call.__qualname__ = name
    return call


def _show_plan_cache_info() -> None:
    """``cupy.fft.config.show_plan_cache_info``: the pool's cache, printed here."""
    print(_plan_cache("show_info", "show_plan_cache_info")(), end="")


class FFTConfigModule(types.ModuleType):
    """The ``cupy.fft.config`` module object."""

    def __init__(self) -> None:
        super().__init__("cupy.fft.config")
        self.__dict__.update(
            # CuPy keeps these two as context variables; one GPU per session here
            _nd_planning=True, use_multi_gpus=False,
            _use_multi_gpus=contextvars.ContextVar("cupy.fft.config.use_multi_gpus", default=False),
            _devices=contextvars.ContextVar("cupy.fft.config.devices", default=None),
            get_plan_cache=_in_the_pool("get_plan_cache"),
            set_cufft_gpus=_in_the_pool("set_cufft_gpus"),
            **{name: _plan_cache(operation, name)
               for operation, name in api.FFT_PLAN_CACHE_OPERATIONS.items() if operation != "show_info"},
            show_plan_cache_info=_show_plan_cache_info,
            set_cufft_callbacks=set_cufft_callbacks)

    @property
    def enable_nd_planning(self) -> bool:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self.__dict__["_nd_planning"]

    @enable_nd_planning.setter
    def enable_nd_planning(self, value: Any) -> None:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        active_session().submit(m.KIND_CUDA, api.NONE, None, "fft.nd_planning", None, [bool(value)],
                                label="cupy.fft.config.enable_nd_planning")
        self.__dict__["_nd_planning"] = bool(value)


class set_cufft_callbacks:
    """``cupy.fft.config.set_cufft_callbacks``: cuFFT load and/or store callbacks (CUDA
    C++ sources defining them) for the FFTs issued inside the ``with`` block.

    Entering waits for the worker, where CuPy compiles the sources (NVRTC, LTO) and
    enters its own context; leaving is queued, so exactly the FFTs between the two use
    the callbacks, in op order. Aux data is a remote array (``cb_load_aux_arr``,
    deprecated in CuPy) or its ``.data`` (``cb_load_data``; keep the array alive).
    Unlike CuPy's (per thread), a block holds for the whole session: FFTs that other
    threads sharing the session issue meanwhile use it too. When an op fails, the pool
    leaves the session's blocks (the ops after it, the block's exit among them, wait
    for the client to see the error).
    """

    def __init__(self, cb_load: Any = None, cb_store: Any = None, *, cb_load_aux_arr: Any = None,
                 cb_store_aux_arr: Any = None, cb_load_name: Any = None, cb_store_name: Any = None,
                 cb_load_data: Any = None, cb_store_data: Any = None, cb_ver: str = "legacy",
                 nvrtc_options: tuple = ()) -> None:
        # CuPy's own checks of its arguments, at construction as in CuPy
        if cb_ver not in ("legacy", "jit"):
            raise ValueError('cb_ver must be "legacy" or "jit"')
        if cb_load_aux_arr is not None and cb_load_data is not None:
            raise ValueError("only use cb_load_data and not cb_load_aux_arr")
        if cb_store_aux_arr is not None and cb_store_data is not None:
            raise ValueError("only use cb_store_data and not cb_store_aux_arr")
        self._session: Any = None   # the session of the block, once entered
        self._options = {
            "cb_load": cb_load, "cb_store": cb_store, "cb_load_aux_arr": cb_load_aux_arr,
            "cb_store_aux_arr": cb_store_aux_arr, "cb_load_name": cb_load_name,
            "cb_store_name": cb_store_name, "cb_load_data": _span(cb_load_data),
            "cb_store_data": _span(cb_store_data), "cb_ver": cb_ver,
            "nvrtc_options": list(nvrtc_options)}

    def __enter__(self) -> "set_cufft_callbacks":
        session = active_session()
        session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "fft.callbacks", None,
                                     [self._options], label="cupy.fft.config.set_cufft_callbacks"))
        self._session = session
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if self._session is None:   # never entered
            return
        self._session.submit(m.KIND_CUDA, api.NONE, None, "fft.callbacks_exit", None, [],
                             label="cupy.fft.config.set_cufft_callbacks")


def _span(pointer: Any) -> list | None:
    """A remote ``MemoryPointer`` as [address, bytes to the end of its allocation]."""
    if pointer is None:
        return None
    if not isinstance(pointer, MemoryPointer):
        raise TypeError("callback data is a cupy MemoryPointer (an array's .data)")
    return [pointer.ptr, pointer.mem.ptr + pointer.mem.size - pointer.ptr]


def _cache_in_the_pool() -> str:
    raise NotImplementedError("cupy.fft._callback.get_cache_dir: callbacks are built and "
                              "cached in the pool's process, not on gpu-workbench's client")


def build_callback_module() -> types.ModuleType:
    """``cupy.fft._callback``: ``set_cufft_callbacks`` and ``get_cache_dir`` (which code and
    tests patch; the cache itself is the pool's)."""
    module = types.ModuleType("cupy.fft._callback")
    _cache_in_the_pool.__name__ = "get_cache_dir"
    module.__dict__.update(set_cufft_callbacks=set_cufft_callbacks, get_cache_dir=_cache_in_the_pool)
    return module
