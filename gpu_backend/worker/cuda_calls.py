"""The session's CUDA runtime objects (events, its memory pool) and memory facts of arrays.

These back the proxy's ``cupy.cuda.Event``, ``cupy.cuda.get_elapsed_time`` and
``cupy.get_default_memory_pool()``. A call is one op of kind ``KIND_CUDA``, named
from :data:`gpu_backend.protocol.api.CUDA_CALLS`; it runs in op order, so an event
recorded between two ops marks exactly that point of the session's stream. Events
live in the handle table's objects under ids the client chose, and are dropped the
way arrays are (a bare id in the op stream). ``array.data`` and ``array.base`` answer
``ndarray.data`` (the addresses of an array's memory on the pool's device) and
``ndarray.base`` (which of the session's arrays owns that memory). ``fft.callbacks``
enters CuPy's ``set_cufft_callbacks`` in the worker (JIT callbacks only) and
``fft.callbacks_exit`` leaves it, in op order, so exactly the FFTs issued inside the
client's block use them. ``graph.*`` are CuPy's graph API (``Stream.begin_capture``,
``Graph.launch``...), run by the executor's ``user_graphs`` (worker/user_graphs.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import api
from ..protocol.errors import ProtocolError

__all__ = ["run_cuda_call"]

_SPECIAL = "cupyx.scipy.special."


def _flag(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise TypeError(f"{what} must be a bool")
    return value


def _callback_options(executor: Any, options: Any) -> dict:
    """``set_cufft_callbacks``' options, checked: sources and names are strings, callbacks
    are JIT ones (NVRTC builds device code only; CuPy's *legacy* callbacks are built by
    nvcc into a host module that the pool would load, so a client's code would run on
    the pool's host: refused), data is memory of the session's own arrays."""
    if type(options) is not dict or not set(options) <= api.FFT_CALLBACK_OPTIONS:
        raise TypeError("set_cufft_callbacks takes the options "
                        + ", ".join(sorted(api.FFT_CALLBACK_OPTIONS)))
    options = dict(options)
    if options.get("cb_ver", "legacy") != "jit":
        raise NotImplementedError(
            "cuFFT legacy callbacks are built by nvcc into a host module that the pool would "
            "load (a client's code running on the pool's host): gpu-workbench takes JIT "
            "callbacks only, cb_ver='jit' (CuPy deprecates the legacy ones)")
    for key in ("cb_load", "cb_store", "cb_load_name", "cb_store_name"):
        if options.get(key) is not None and type(options[key]) is not str:
            raise TypeError(f"{key} must be a string (CUDA C++ source, or a name)")
    nvrtc = options.get("nvrtc_options", [])
    if not isinstance(nvrtc, (list, tuple)) or not all(type(o) is str for o in nvrtc):
        raise TypeError("nvrtc_options must be a tuple of strings")
    options["nvrtc_options"] = tuple(nvrtc)
    for key in ("cb_load_data", "cb_store_data"):
        if options.get(key) is not None:
            span = options[key]
            if type(span) is not list or len(span) != 2 or not all(type(v) is int for v in span):
                raise TypeError(f"{key} travels as [address, bytes]")
            view = executor.table.view_at(span[0], (max(span[1], 1),), np.dtype(np.uint8), None)
            options[key] = executor.device.memory_pointer(view)
    return options


def run_cuda_call(executor: Any, name: Any, target: Any, args: list) -> Any:
    """Run one CUDA call of the session; returns its value (None for most)."""
    device, table = executor.device, executor.table
    if type(name) is str and name.startswith("graph."):
        return executor.user_graphs.call(name, target, args)
    if name == "event.new":
        table.put_object(target, device.new_event(_flag(args[0] if args else False, "disable_timing")))
        return None
    if name in ("event.record", "event.done", "event.synchronize"):
        event = table.get_object(target, device.event_type)
        if name == "event.record":
            device.record_event(event)
            return None
        if name == "event.done":
            return device.event_done(event)
        device.event_synchronize(event)
        return None
    if name == "event.elapsed":
        if len(args) != 2:
            raise ProtocolError("event.elapsed takes two event handles")
        start, end = (table.get_object(hid, device.event_type) for hid in args)
        return device.event_elapsed_ms(start, end)
    if name == "array.data":
        span = list(device.data_span(table.get(target)))   # (CuPy's figures, not the bounds)
        executor.replay.pointer_told()   # (a user's kernel may be given it from now on)
        return span
    if name == "array.base":
        return table.base_of(target)
    if name == "ufunc.types":   # the loops of one of the device's ufuncs, by allow-listed name
        which = args[0] if args else None
        fn = executor.device.functions.get(which) if type(which) is str else None
        if hasattr(fn, "resolved"):   # a function of a module imported on first use
            fn = fn.resolved()
        types = getattr(fn, "types", None)
        special = type(which) is str and which.startswith(_SPECIAL) \
            and which[len(_SPECIAL):] in api.SPECIAL_UFUNCS
        if (which not in api.UFUNCS and not special) or types is None:
            raise TypeError(f"{which!r} is not a ufunc of the pool's device")
        return [str(t) for t in types]
    if name == "pool.figures":
        return {**device.pool_figures(), "limit": executor.pool_limit()}
    if name == "pool.free_all_blocks":
        device.release_cache()
        return None
    if name == "fft.nd_planning":   # cupy.fft.config.enable_nd_planning, for this session
        device.set_nd_planning(_flag(args[0] if args else None, "enable_nd_planning"))
        return None
    if name == "fft.callbacks":   # cupy.fft.config.set_cufft_callbacks, entered
        device.enter_fft_callbacks(_callback_options(executor, args[0] if args else None))
        return None
    if name == "fft.callbacks_exit":
        device.exit_fft_callbacks()
        return None
    if name == "fft.version":
        return device.cufft_version()
    if name == "fft.plan_cache":   # cupy.fft.config's plan-cache functions, this session's cache
        operation, *values = args if args else [None]
        if operation not in api.FFT_PLAN_CACHE_OPERATIONS or len(values) > 1 \
                or not all(type(v) is int for v in values):
            raise TypeError("a plan-cache call is (operation, [an integer])")
        return device.fft_plan_cache(operation, values)
    if name == "core.accelerators":   # cupy._core.set_{elementwise,reduction,routine}_accelerators
        which, chosen = (list(args) + [None, None])[:2]
        if which not in ("elementwise", "reduction", "routine") or not isinstance(chosen, list) \
                or not all(isinstance(n, (str, int)) and not isinstance(n, bool) for n in chosen):
            raise TypeError("accelerators are set as (elementwise, reduction or routine, "
                            "a list of names or CuPy's numbers)")
        device.set_accelerators(which, chosen)
        return None
    if name == "pool.set_limit":
        executor.set_pool_limit(args[0] if args else None)
        return None
    raise ProtocolError(f"unknown CUDA call {name!r}")
