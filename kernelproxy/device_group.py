"""Several GPUs for one client: ``cupy.cuda.Device(k)`` over a group of sessions.

A client that asks for *n* devices (``kernelproxy.connect(..., devices=n)``) holds one
ordinary session per device, each on a device of its own in the pool, so that every
device's share, memory quota and accounting stay the pool's usual per-session ones
(docs/architecture.md, "A session on several GPUs"). Device *k* of the client is the
session ``group[k]``; ``cupy.cuda.Device(k)`` makes it the current one, per thread, as in
CuPy.

Where the work runs follows CuPy on a machine without peer access between its GPUs
(which is what ``runtime.deviceCanAccessPeer`` answers: the sessions are separate
processes):

- a function of the ``cupy`` modules runs on the current device; an argument array of
  another device is CuPy's ``ValueError`` ("... Peer access is unavailable between these
  devices."). ``cupy.array``, ``cupy.asarray`` and ``ndarray.copy`` copy an array of
  another device to the current one, as CuPy's do (through the client's memory here,
  where CUDA would stage a peer copy through the host), and ``*_like`` functions take only
  their prototype's shape, dtype and layout;
- an array's methods and operators run on the array's own device (CuPy launches them on
  the current device and reads the array by peer access where it can): the values are
  the same; an operand of a third device is the ValueError above;
- reading values (``get``, ``float``, ``print``) works from any current device.

(The current device is kernelproxy.state's; an array moves by kernelproxy.uploads.)
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["open_devices", "device_mismatch", "like_on_current"]

#: ``*_like`` functions and the creation function each becomes with an explicit shape
_LIKE = {"empty_like": "empty", "zeros_like": "zeros", "ones_like": "ones", "full_like": "full"}


def open_devices(open_session: Callable[..., Any], devices: int) -> Any:
    """Device 0's session of a client that holds *devices* devices: one session each,
    ``open_session(apart_from=[ids so far])`` placing each on a device the others do not
    hold; on a refusal the ones opened are closed and the refusal raised."""
    if type(devices) is not int or devices < 1:
        raise ValueError(f"devices is a number of devices, 1 or more, not {devices!r}")
    group = [open_session()]
    if devices == 1:
        return group[0]
    try:
        while len(group) < devices:
            group.append(open_session(apart_from=[s.id for s in group]))
    except BaseException:
        for session in group:
            session.close()
        raise
    for ordinal, session in enumerate(group):
        session.group, session.ordinal = group, ordinal
    return group[0]


def device_mismatch(resides: int, current: int) -> ValueError:
    """CuPy's error for an array of another device in a kernel's arguments."""
    return ValueError(
        f"The device where the array resides ({resides}) is different from the current "
        f"device ({current}). Peer access is unavailable between these devices.")


def like_on_current(qualname: str, args: tuple, kwargs: dict, session: Any) -> tuple | None:
    """``zeros_like(x)`` where *x* is on another device of the client: the creation call
    (name, args, kwargs) that makes the same array on the current device, or None when
    the prototype is not such an array."""
    make = _LIKE.get(qualname)
    if make is None or not args:
        return None
    prototype = args[0]
    owner = getattr(prototype, "_s", None)
    if owner is None or owner is session or session.group is None or owner not in session.group:
        return None
    rest = dict(kwargs)
    positional = list(args[1:])
    fill = [positional.pop(0)] if make == "full" and positional else []
    if make == "full" and not fill:
        fill = [rest.pop("fill_value")] if "fill_value" in rest else []
    names = ("dtype", "order", "subok", "shape")
    for name, value in zip(names, positional):
        rest[name] = value
    dtype = rest.pop("dtype", None)
    order = rest.pop("order", "K")
    rest.pop("subok", None)
    shape = rest.pop("shape", None)
    if rest:
        raise TypeError(f"{qualname}() got an unexpected keyword argument {next(iter(rest))!r}")
    if order in ("K", "A", "k", "a", None):
        flags = prototype.flags
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    new_kwargs = {"dtype": prototype.dtype if dtype is None else dtype, "order": order}
    return make, (prototype.shape if shape is None else shape, *fill), new_kwargs
