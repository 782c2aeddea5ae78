"""The session's CUDA runtime objects (events, its memory pool) and memory facts of arrays.

These back the proxy's ``cupy.cuda.Event``, ``cupy.cuda.get_elapsed_time`` and
``cupy.get_default_memory_pool()``. A call is one op of kind ``KIND_CUDA``, named
from :data:`gpu_backend.protocol.api.CUDA_CALLS`; it runs in op order, so an event
recorded between two ops marks exactly that point of the session's stream. Events
live in the handle table's objects under ids the client chose, and are dropped the
way arrays are (a bare id in the op stream). ``array.data`` and ``array.base`` answer
``ndarray.data`` (the addresses of an array's memory on the pool's device) and
``ndarray.base`` (which of the session's arrays owns that memory).
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ProtocolError

__all__ = ["run_cuda_call"]


def _flag(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise TypeError(f"{what} must be a bool")
    return value


def run_cuda_call(executor: Any, name: Any, target: Any, args: list) -> Any:
    """Run one CUDA call of the session; returns its value (None for most)."""
    device, table = executor.device, executor.table
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
        return list(device.memory_span(table.get(target)))
    if name == "array.base":
        return table.base_of(target)
    if name == "pool.figures":
        return {**device.pool_figures(), "limit": executor.pool_limit()}
    if name == "pool.free_all_blocks":
        device.release_cache()
        return None
    if name == "fft.nd_planning":   # cupy.fft.config.enable_nd_planning, for this session
        device.set_nd_planning(_flag(args[0] if args else None, "enable_nd_planning"))
        return None
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
