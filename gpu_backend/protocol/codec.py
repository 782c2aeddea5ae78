"""Values on the wire: msgpack plus a closed set of typed extensions.

Both ends encode op arguments and results with this module. Decoding never
constructs anything outside the list below: no pickle, no class lookup by a
name the peer chose. A peer's dtype strings are checked against the numeric
kinds a GPU array can hold.

Python type      wire form
---------------  ------------------------------------------------------------
None/bool/int/   msgpack native (ints beyond 64 bits: ``EXT_BIGINT``)
float/str/bytes
list, dict       msgpack native (dict keys must be str)
tuple            ``EXT_TUPLE`` (indexing tells ``x[(0, 1)]`` from ``x[[0, 1]]``)
slice            ``EXT_SLICE``
Ellipsis         ``EXT_ELLIPSIS``
complex          ``EXT_COMPLEX``
numpy.dtype      ``EXT_DTYPE``       (dtype.str)
numpy scalar     ``EXT_TYPE``        type objects such as ``numpy.float32``
  type
numpy scalar     ``EXT_NPSCALAR``    (dtype.str, raw bytes)
numpy.ndarray    ``EXT_NDARRAY``     (dtype.str, shape, raw bytes), host data
remote array     ``EXT_HANDLE``      a session-local integer handle id
"""

from __future__ import annotations

import struct
from typing import Any, Callable

import msgpack
import numpy as np

__all__ = [
    "CodecError",
    "EXT_HANDLE",
    "Handle",
    "check_dtype",
    "packb",
    "unpackb",
    "make_packer",
    "make_unpacker",
    "ext_hook_for",
]

EXT_HANDLE = 1
EXT_TUPLE = 2
EXT_SLICE = 3
EXT_ELLIPSIS = 4
EXT_COMPLEX = 5
EXT_DTYPE = 6
EXT_TYPE = 7
EXT_NPSCALAR = 8
EXT_NDARRAY = 9
EXT_BIGINT = 10

#: dtype kinds a device array may have (bool, ints, floats, complex).
ALLOWED_KINDS = frozenset("biufc")
#: Cap on the decimal digits of an oversized int, so decoding stays cheap.
MAX_BIGINT_DIGITS = 400

_Q = struct.Struct("<q")
_DD = struct.Struct("<dd")


class CodecError(ValueError):
    """A value on the wire is malformed or not of an allowed kind."""


class Handle(int):
    """A remote array's id, as the server sees it before resolving it."""

    __slots__ = ()


def check_dtype(spec: Any) -> np.dtype:
    """Turn a peer's dtype string into a numeric dtype, or raise CodecError."""
    if not isinstance(spec, str) or len(spec) > 16:
        raise CodecError(f"bad dtype {spec!r}")
    try:
        dt = np.dtype(spec)
    except TypeError as exc:
        raise CodecError(f"bad dtype {spec!r}") from exc
    if dt.kind not in ALLOWED_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise CodecError(f"dtype {spec!r} is not a numeric dtype")
    return dt


# ---------------------------------------------------------------- encoding


def _encode_default(handle_of: Callable[[Any], int | None]) -> Callable[[Any], Any]:
    """Build msgpack's ``default`` hook; *handle_of* maps remote arrays to ids."""

    def default(obj: Any) -> Any:
        if isinstance(obj, tuple):
            return msgpack.ExtType(EXT_TUPLE, _pack_nested(list(obj)))
        hid = handle_of(obj)
        if hid is not None:
            return msgpack.ExtType(EXT_HANDLE, _Q.pack(hid))
        if isinstance(obj, slice):
            return msgpack.ExtType(EXT_SLICE, _pack_nested([obj.start, obj.stop, obj.step]))
        if obj is Ellipsis:
            return msgpack.ExtType(EXT_ELLIPSIS, b"")
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in ALLOWED_KINDS:
                raise TypeError(f"unsupported dtype {obj.dtype} for a device array")
            data = np.ascontiguousarray(obj)
            return msgpack.ExtType(
                EXT_NDARRAY, _pack_nested([data.dtype.str, list(data.shape), data.tobytes()])
            )
        if isinstance(obj, np.generic):
            if obj.dtype.kind not in ALLOWED_KINDS:
                raise TypeError(f"unsupported scalar type {type(obj).__name__}")
            return msgpack.ExtType(EXT_NPSCALAR, _pack_nested([obj.dtype.str, obj.tobytes()]))
        if isinstance(obj, np.dtype):
            return msgpack.ExtType(EXT_DTYPE, obj.str.encode())
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return msgpack.ExtType(EXT_TYPE, np.dtype(obj).str.encode())
        if obj in (bool, int, float, complex):
            return msgpack.ExtType(EXT_TYPE, obj.__name__.encode())
        if isinstance(obj, complex):
            return msgpack.ExtType(EXT_COMPLEX, _DD.pack(obj.real, obj.imag))
        if isinstance(obj, int):  # beyond 64 bits, or an int subclass such as bool handled above
            return msgpack.ExtType(EXT_BIGINT, str(int(obj)).encode())
        if isinstance(obj, float):
            return float(obj)
        if isinstance(obj, (range,)):
            return list(obj)
        raise TypeError(f"cannot send a value of type {type(obj).__name__} to the GPU pool")

    def _pack_nested(value: Any) -> bytes:
        return msgpack.packb(value, default=default, strict_types=True, use_bin_type=True)

    return default


def _handle_id(obj: Any) -> int | None:
    return int(obj) if type(obj) is Handle else None


def make_packer(handle_of: Callable[[Any], int | None] = _handle_id) -> msgpack.Packer:
    """A reusable packer; *handle_of* returns an id for remote array objects."""
    return msgpack.Packer(
        default=_encode_default(handle_of), strict_types=True, use_bin_type=True, autoreset=True
    )


_plain_packer = make_packer()


def packb(value: Any) -> bytes:
    """Encode a header or reply (handles only as :class:`Handle`)."""
    return _plain_packer.pack(value)


# ---------------------------------------------------------------- decoding


def ext_hook_for(resolve: Callable[[int], Any] | None) -> Callable[[int, bytes], Any]:
    """Build the ``ext_hook`` that decodes our extensions.

    *resolve* turns a handle id into the object it names (the server's handle
    table); when None, handles decode as :class:`Handle`.
    """

    def unpack_nested(data: bytes) -> Any:
        return msgpack.unpackb(
            data, ext_hook=hook, raw=False, strict_map_key=True, use_list=True
        )

    def hook(code: int, data: bytes) -> Any:
        if code == EXT_HANDLE:
            if len(data) != 8:
                raise CodecError("bad handle")
            (hid,) = _Q.unpack(data)
            return Handle(hid) if resolve is None else resolve(hid)
        if code == EXT_TUPLE:
            items = unpack_nested(data)
            if not isinstance(items, list):
                raise CodecError("bad tuple")
            return tuple(items)
        if code == EXT_SLICE:
            parts = unpack_nested(data)
            if not isinstance(parts, list) or len(parts) != 3:
                raise CodecError("bad slice")
            return slice(*parts)
        if code == EXT_ELLIPSIS:
            return Ellipsis
        if code == EXT_COMPLEX:
            if len(data) != 16:
                raise CodecError("bad complex")
            return complex(*_DD.unpack(data))
        if code == EXT_DTYPE:
            return check_dtype(data.decode("ascii", "replace"))
        if code == EXT_TYPE:
            name = data.decode("ascii", "replace")
            builtin = {"bool": bool, "int": int, "float": float, "complex": complex}.get(name)
            return builtin if builtin is not None else check_dtype(name).type
        if code == EXT_NPSCALAR:
            parts = unpack_nested(data)
            if not (isinstance(parts, list) and len(parts) == 2 and isinstance(parts[1], bytes)):
                raise CodecError("bad scalar")
            dt = check_dtype(parts[0])
            if len(parts[1]) != dt.itemsize:
                raise CodecError("bad scalar size")
            return np.frombuffer(parts[1], dtype=dt)[0]
        if code == EXT_NDARRAY:
            parts = unpack_nested(data)
            if not (isinstance(parts, list) and len(parts) == 3 and isinstance(parts[2], bytes)):
                raise CodecError("bad array")
            dt = check_dtype(parts[0])
            shape = check_shape(parts[1])
            count = int(np.prod(shape, dtype=np.int64))
            if count * dt.itemsize != len(parts[2]):
                raise CodecError("array size does not match its shape")
            return np.frombuffer(parts[2], dtype=dt, count=count).reshape(shape).copy()
        if code == EXT_BIGINT:
            text = data.decode("ascii", "replace")
            if len(text) > MAX_BIGINT_DIGITS or not text.lstrip("-").isdigit():
                raise CodecError("bad integer")
            return int(text)
        raise CodecError(f"unknown extension type {code}")

    return hook


def check_shape(shape: Any) -> tuple[int, ...]:
    """Validate a peer's shape: a list of at most 64 non-negative ints."""
    if not isinstance(shape, (list, tuple)) or len(shape) > 64:
        raise CodecError(f"bad shape {shape!r}")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise CodecError(f"bad shape {shape!r}")
    return tuple(shape)


def make_unpacker(resolve: Callable[[int], Any] | None = None) -> msgpack.Unpacker:
    """A streaming unpacker: ops are decoded one at a time, in order."""
    return msgpack.Unpacker(
        ext_hook=ext_hook_for(resolve), raw=False, strict_map_key=True, use_list=True,
        max_buffer_size=1 << 31,
    )


_plain_hook = ext_hook_for(None)


def unpackb(data: bytes) -> Any:
    """Decode a header or reply; handles come back as :class:`Handle`."""
    return msgpack.unpackb(
        data, ext_hook=_plain_hook, raw=False, strict_map_key=True, use_list=True
    )
