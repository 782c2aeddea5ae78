"""Values on the wire: msgpack plus a closed set of typed extensions.

Both ends encode op arguments and results with this module. Decoding never
constructs anything outside the list below: no unpickling, no class lookup by a
name the peer chose. A peer's dtype strings are checked against the numeric
kinds a GPU array can hold.

Python type      wire form
---------------  ------------------------------------------------------------
None/bool/int/   msgpack native (ints beyond 64 bits: ``EXT_BIGINT``)
float/str/bytes
list, dict       msgpack native (a client's dict keys must be str; a reply's may be any
                 hashable value, such as value_indices's numbers)
tuple            ``EXT_TUPLE`` (indexing tells ``x[(0, 1)]`` from ``x[[0, 1]]``)
slice            ``EXT_SLICE``
Ellipsis         ``EXT_ELLIPSIS``
complex          ``EXT_COMPLEX``
numpy.dtype      ``EXT_DTYPE``       (dtype.str); a structured or raw void dtype:
                 ``EXT_STRUCT_DTYPE`` (its fields as plain data, :func:`dtype_spec`)
numpy scalar     ``EXT_TYPE``        type objects such as ``numpy.float32``
  type
numpy scalar     ``EXT_NPSCALAR``    (dtype.str, raw bytes)
numpy.ndarray    ``EXT_NDARRAY``     (dtype.str, shape, raw bytes), host data
remote array     ``EXT_HANDLE``      a session-local integer handle id
object with      ``EXT_DEVICE_VIEW`` (pointer, shape, typestr, strides[, 1]): memory the
  ``__cuda_array_interface__``       session already holds on the pool, named by address
                                     (a client's ``x.data.ptr``); the worker accepts it
                                     only inside one of the session's own allocations;
                                     a fifth item 1: made by ``cupy.ndarray(memptr=p)``,
                                     the array keeps *p*'s memory (its ``.data.mem``)
"""

from __future__ import annotations

import functools
import math
import re
import struct
import threading
import warnings
from typing import Any, Callable

import msgpack
import numpy as np

__all__ = [
    "CodecError",
    "DeviceView",
    "NeedsDeviceViews",
    "with_device_views",
    "EXT_HANDLE",
    "Handle",
    "check_dtype",
    "unsupported_dtype",
    "wire_dtype",
    "device_dtype",
    "dtype_spec",
    "packb",
    "unpackb",
    "make_packer",
    "thread_packs",
    "make_unpacker",
    "ext_hook_for",
    "array_from_buffer",
    "check_shape",
    "MAX_NESTING",
    "UNPACK_OPTIONS",
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
EXT_DEVICE_VIEW = 11
EXT_STRUCT_DTYPE = 12

#: dtype kinds a device array may have (bool, ints, floats, complex).
ALLOWED_KINDS = frozenset("biufc")
#: Number types NumPy gets from ml_dtypes (CuPy has bfloat16): their kind is "V" and their
#: ``dtype.str`` a raw void's, so they travel by name.
EXTENSION_NUMBERS = frozenset({"bfloat16"})
try:   # registers "bfloat16" with NumPy where ml_dtypes is installed (CuPy's own condition)
    import ml_dtypes  # noqa: F401
except ImportError:
    pass
#: Cap on the decimal digits of an oversized int, so decoding stays cheap.
MAX_BIGINT_DIGITS = 400
#: How deep extensions (tuples, slices, scalars, arrays) may nest inside one
#: another. Each level is a nested msgpack call that takes about 48 KiB of C
#: stack: uncapped, a few kilobytes of nested tuples crash the process; 16
#: levels fit a 1 MiB thread stack.
MAX_NESTING = 16
#: Decoding options of every unpacker. ``timestamp=2``: msgpack decodes its own
#: extension -1 (Timestamp) before any hook sees it; as an int it stays inside
#: the closed set of types above.
UNPACK_OPTIONS: dict[str, Any] = {
    "raw": False, "strict_map_key": True, "use_list": True, "timestamp": 2,
}

_Q = struct.Struct("<q")
_DD = struct.Struct("<dd")


class CodecError(ValueError):
    """A value on the wire is malformed or not of an allowed kind."""


class Handle(int):
    """A remote array's id, as the server sees it before resolving it."""

    __slots__ = ()


#: A dtype name or ``dtype.str`` ("<f8", "|b1", "float32", "?"); never the comma,
#: bracket or parenthesis forms, which NumPy parses with a Python-syntax parser.
_DTYPE_SPEC = re.compile(r"[<>=|]?[A-Za-z_?]{1,12}[0-9]{0,3}")
_BIGINT = re.compile(rb"-?[0-9]{1,%d}" % MAX_BIGINT_DIGITS)
_BIGINT_LIMIT = 10**MAX_BIGINT_DIGITS


def _is_numeric(dt: np.dtype) -> bool:
    return (dt.kind in ALLOWED_KINDS and dt.fields is None and dt.subdtype is None) \
        or (dt.kind == "V" and dt.fields is None and dt.name in EXTENSION_NUMBERS)


def device_dtype(dt: np.dtype) -> bool:
    """Whether a device array may have *dt*: a number, or a structure (or a raw void) whose
    every field is one, as CuPy's structured arrays; never objects, strings or dates."""
    if _is_numeric(dt):
        return True
    if dt.kind != "V" or dt.subdtype is not None or dt.itemsize == 0:
        return False   # (a subarray only as a field; an empty void, CuPy's "|V0", holds nothing)
    return dt.fields is None or all(_device_field(field[0]) for field in dt.fields.values())


def _device_field(dt: np.dtype) -> bool:
    return device_dtype(dt.subdtype[0]) if dt.subdtype is not None else device_dtype(dt)


def unsupported_dtype(dt: np.dtype) -> ValueError:
    """CuPy's refusal of a dtype no device array may have, in its words (its
    ``check_supported_dtype``): a structure holding objects is named for its references."""
    if dt.kind == "V" and dt.hasobject:
        return ValueError(f"Unsupported dtype {dt} because it contains references which cannot "
                          "be supported by CuPy.\nThis may happen even if a dtype only contains "
                          "basic types if the original array contained e.g. object dtype.")
    return ValueError(f"Unsupported dtype {dt}")


#: Limits on a structured dtype from a peer: nesting, fields in all, size.
_STRUCT_DEPTH, _STRUCT_FIELDS, _STRUCT_ITEMSIZE = 8, 4096, (1 << 31) - 1
_STRUCT_KEYS = frozenset({"names", "formats", "offsets", "itemsize", "aligned"})


def dtype_spec(dt: np.dtype) -> Any:
    """What travels for a dtype: ``dt.str`` for a number; for a structure, its names,
    field specs, offsets, item size and alignment as plain data (a subarray field is
    ``["sub", spec, shape]``, a raw void ``["V", size]``). Never NumPy's string forms of
    structures, which NumPy would parse."""
    if dt.subdtype is not None:
        return ["sub", dtype_spec(dt.subdtype[0]), list(dt.subdtype[1])]
    if dt.fields is None:
        if dt.kind != "V":
            return dt.str
        return dt.name if dt.name in EXTENSION_NUMBERS else ["V", dt.itemsize]
    names = list(dt.names)
    return {"names": names, "formats": [dtype_spec(dt.fields[n][0]) for n in names],
            "offsets": [dt.fields[n][1] for n in names], "itemsize": dt.itemsize,
            "aligned": bool(dt.isalignedstruct)}


def _struct_dtype(spec: Any, depth: int, budget: list) -> np.dtype:
    """A peer's structure spec (see :func:`dtype_spec`) as a dtype, each part checked."""
    dt = _struct_part(spec, depth, budget)
    if depth == 0 and dt.subdtype is not None:
        raise CodecError("a subarray dtype is only a structure's field")
    return dt


def _struct_part(spec: Any, depth: int, budget: list) -> np.dtype:
    if depth > _STRUCT_DEPTH:
        raise CodecError(f"dtype structures nest more than {_STRUCT_DEPTH} deep")
    budget[0] -= 1
    if budget[0] < 0:
        raise CodecError(f"a dtype has more than {_STRUCT_FIELDS} fields")
    if isinstance(spec, str):
        return check_dtype(spec)
    if isinstance(spec, list) and len(spec) == 2 and spec[0] == "V":
        size = spec[1]
        if type(size) is not int or not 0 < size <= _STRUCT_ITEMSIZE:
            raise CodecError(f"bad void size {size!r}")
        try:
            return np.dtype(("V", size))
        except (TypeError, ValueError) as exc:
            raise CodecError(f"bad void: {exc}") from None
    if isinstance(spec, list) and len(spec) == 3 and spec[0] == "sub":
        shape = check_shape(spec[2])
        base = _struct_part(spec[1], depth + 1, budget)
        if not shape or any(n == 0 or n > 1 << 24 for n in shape) \
                or math.prod(shape) * base.itemsize > _STRUCT_ITEMSIZE:
            raise CodecError(f"bad subarray shape {shape}")
        try:
            return np.dtype((base, shape))
        except (TypeError, ValueError) as exc:
            raise CodecError(f"bad subarray: {exc}") from None
    if not (isinstance(spec, dict) and set(spec) == _STRUCT_KEYS):
        raise CodecError("bad dtype structure")
    names, formats, offsets = spec["names"], spec["formats"], spec["offsets"]
    itemsize, aligned = spec["itemsize"], spec["aligned"]
    if not (isinstance(names, list) and isinstance(formats, list) and isinstance(offsets, list)
            and len(names) == len(formats) == len(offsets)
            and all(isinstance(n, str) and 0 < len(n) <= 255 for n in names)
            and len(set(names)) == len(names)
            and all(type(o) is int and 0 <= o < _STRUCT_ITEMSIZE for o in offsets)
            and type(itemsize) is int and 0 < itemsize <= _STRUCT_ITEMSIZE
            and type(aligned) is bool):
        raise CodecError("bad dtype structure")
    fields = [_struct_part(f, depth + 1, budget) for f in formats]
    if any(o + f.itemsize > itemsize for o, f in zip(offsets, fields)):
        raise CodecError("bad dtype structure: a field ends past the item")   # (NumPy misses
        # this for offsets near 2**31: a field read there would leave the array)
    try:
        return np.dtype({"names": names, "formats": fields, "offsets": offsets,
                         "itemsize": itemsize}, align=aligned)
    except (TypeError, ValueError, OverflowError) as exc:   # overlapping fields, a misaligned offset, ...
        raise CodecError(f"bad dtype structure: {exc}") from None


@functools.lru_cache(maxsize=256)
def _parse_dtype(spec: str) -> np.dtype | None:
    if not _DTYPE_SPEC.fullmatch(spec):
        return None
    try:
        with warnings.catch_warnings():  # deprecated aliases ("a") are refused below anyway
            warnings.simplefilter("ignore", DeprecationWarning)
            dt = np.dtype(spec)
    except Exception:  # TypeError, ValueError, ...: not a dtype
        return None
    return dt if _is_numeric(dt) else None


def check_dtype(spec: Any) -> np.dtype:
    """Turn a peer's dtype string into a numeric dtype, or its structure spec
    (:func:`dtype_spec`) into a structured one of numeric fields, or raise CodecError."""
    if isinstance(spec, (list, dict)):
        return _struct_dtype(spec, 0, [_STRUCT_FIELDS])
    if not isinstance(spec, str) or len(spec) > 16:
        raise CodecError(f"bad dtype {spec!r}")
    dt = _parse_dtype(spec)
    if dt is None:
        raise CodecError(f"dtype {spec!r} is not a numeric dtype")
    return dt


#: The pool's dtype strings as the client has met them (numbers: a handful).
_WIRE_DTYPES: dict[str, np.dtype] = {}


def wire_dtype(spec: Any) -> np.dtype:
    """The dtype of a result's metadata or download, as the pool sent it
    (:func:`dtype_spec`): a string from a small cache, a structure checked."""
    if spec.__class__ is str:
        dt = _WIRE_DTYPES.get(spec)
        if dt is None:
            dt = _WIRE_DTYPES[spec] = check_dtype(spec)
        return dt
    return check_dtype(spec)


def _check_kind(dt: np.dtype) -> None:
    """Refuse to send a dtype that a device array cannot have."""
    if not device_dtype(dt):
        raise unsupported_dtype(dt)


# ---------------------------------------------------------------- encoding


def _new_ext(fields: tuple, _new=tuple.__new__, _cls=msgpack.ExtType) -> msgpack.ExtType:
    """An ``ExtType`` of a code and bytes known to be valid, without its Python-level checks."""
    return _new(_cls, fields)


def _encode_default(handle_of: Callable[[Any], int | None]) -> Callable[[Any], Any]:
    """Build msgpack's ``default`` hook; *handle_of* maps remote arrays to ids."""
    default = None
    for _ in range(MAX_NESTING + 1):  # innermost first: the deepest level has no inner hook
        default = _encode_default_at(handle_of, default)
    return default


def _encode_default_at(handle_of: Callable[[Any], int | None],
                       inner: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """One nesting level's ``default`` hook; *inner* encodes the level below."""

    def default(obj: Any) -> Any:
        if isinstance(obj, tuple):
            return msgpack.ExtType(EXT_TUPLE, _pack_nested(list(obj)))
        hid = handle_of(obj)
        if hid is not None:   # the hot case: built as a plain tuple (ExtType's checks cost ~1 µs)
            return _new_ext((EXT_HANDLE, _Q.pack(hid)))
        if isinstance(obj, slice):
            return msgpack.ExtType(EXT_SLICE, _pack_nested([obj.start, obj.stop, obj.step]))
        if obj is Ellipsis:
            return msgpack.ExtType(EXT_ELLIPSIS, b"")
        if isinstance(obj, np.ndarray):
            _check_kind(obj.dtype)
            # tobytes() is C order for any layout (np.ascontiguousarray would make 0-d arrays 1-d)
            return msgpack.ExtType(
                EXT_NDARRAY, _pack_nested([dtype_spec(obj.dtype), list(obj.shape), obj.tobytes()])
            )
        if isinstance(obj, np.generic):
            _check_kind(obj.dtype)
            return msgpack.ExtType(EXT_NPSCALAR, _pack_nested([dtype_spec(obj.dtype), obj.tobytes()]))
        if isinstance(obj, np.dtype):
            _check_kind(obj)
            if obj.kind == "V":
                spec = dtype_spec(obj)
                if type(spec) is str:   # bfloat16
                    return msgpack.ExtType(EXT_DTYPE, spec.encode())
                return msgpack.ExtType(EXT_STRUCT_DTYPE, _pack_nested(spec))
            return msgpack.ExtType(EXT_DTYPE, obj.str.encode())
        if obj is bool or obj is int or obj is float or obj is complex:   # (no ==: poly1d raises)
            return msgpack.ExtType(EXT_TYPE, obj.__name__.encode())
        if isinstance(obj, type):   # a dtype given as a class (np.float32, ctypes.c_int; object,
            dt = np.dtype(obj)      # str and any class of the user's are CuPy's refusals too)
            if not _is_numeric(dt):   # a type travels by name: numbers only (not np.void)
                raise unsupported_dtype(dt)
            return msgpack.ExtType(EXT_TYPE, dtype_spec(dt).encode())
        if isinstance(obj, complex):
            return msgpack.ExtType(EXT_COMPLEX, _DD.pack(obj.real, obj.imag))
        if isinstance(obj, int):  # beyond 64 bits, or an int subclass such as bool handled above
            if not -_BIGINT_LIMIT < obj < _BIGINT_LIMIT:
                raise OverflowError(f"ints of more than {MAX_BIGINT_DIGITS} digits cannot be sent")
            return msgpack.ExtType(EXT_BIGINT, str(int(obj)).encode())
        if isinstance(obj, float):
            return float(obj)
        if isinstance(obj, (range,)):
            return list(obj)
        if type(obj) is DeviceView:
            return msgpack.ExtType(EXT_DEVICE_VIEW, _pack_nested(obj.fields))
        if isinstance(obj, dict):   # a map of a subclass of dict (a kernel's fixed definition)
            return dict(obj)
        if _has_device_interface(obj) or _array_getter(obj) is not None:
            raise NeedsDeviceViews   # read before packing: it may ask the pool
        raise TypeError(f"cannot send a value of type {type(obj).__name__} to the GPU pool")

    def _pack_nested(value: Any) -> bytes:
        if inner is None:
            raise ValueError(f"values nest more than {MAX_NESTING} tuples, slices or arrays deep")
        return msgpack.packb(value, default=inner, strict_types=True, use_bin_type=True)

    return default


class NeedsDeviceViews(Exception):
    """Raised by the encoder at an object with ``__cuda_array_interface__`` or
    ``__cupy_get_ndarray__``: reading it may itself talk to the pool (``x.data.ptr``, a
    poly1d's trimmed coefficients), which must not happen in the middle of encoding, so
    the caller reads every such object first (:func:`with_device_views`) and encodes
    again."""


class DeviceView:
    """An object's ``__cuda_array_interface__`` read and checked (as CuPy checks it) on the
    client, ready to be sent: pointer, shape, typestr, strides (or None)."""

    __slots__ = ("fields",)

    def __init__(self, obj: Any) -> None:
        desc = obj.__cuda_array_interface__
        if not isinstance(desc, dict):
            raise TypeError("__cuda_array_interface__ must be a dict")
        if desc.get("mask") is not None:
            raise ValueError("CuPy currently does not support masked arrays.")
        data, shape, strides = desc.get("data"), desc.get("shape"), desc.get("strides")
        if not (isinstance(data, (tuple, list)) and len(data) == 2 and type(data[0]) is int):
            raise TypeError("__cuda_array_interface__['data'] must be (pointer, read_only)")
        dt = _interface_dtype(desc)
        if dt.byteorder == ">":
            raise ValueError("CuPy does not support the big-endian byte-order")
        _check_kind(dt)
        self.fields = [data[0], [int(n) for n in shape], dtype_spec(dt),
                       None if strides is None else [int(n) for n in strides]]
        if getattr(obj, "_gpuwb_pointed", False):   # cupy.ndarray(memptr=p): keeps p's memory
            self.fields.append(1)


def _interface_dtype(desc: dict) -> np.dtype:
    """The dtype an interface describes, read as CuPy reads it (``get_cai_dtype``): its
    ``typestr``, or for a void one the structure its ``descr`` lists (fields with empty
    names are padding). Read here on the client; a structure travels as plain data."""
    dt = np.dtype(desc.get("typestr"))
    descr = desc.get("descr")
    if dt.kind != "V" or not isinstance(descr, list):
        return dt
    names, offsets, formats, offset = [], [], [], 0
    for name, fmt, *_ in descr:
        field = np.dtype(fmt)
        if name:
            names.append(name)
            formats.append(field)
            offsets.append(offset)
        offset += field.itemsize
    return np.dtype({"names": names, "offsets": offsets, "formats": formats}) if names else dt


def _has_device_interface(obj: Any) -> bool:
    """Whether *obj* describes device memory, without running its property."""
    return (hasattr(type(obj), "__cuda_array_interface__")
            or "__cuda_array_interface__" in getattr(obj, "__dict__", ()))


def _array_getter(obj: Any) -> Callable[[Any], Any] | None:
    """CuPy's ``__cupy_get_ndarray__`` protocol of array-like wrappers (``poly1d`` has it:
    its coefficients)."""
    return getattr(type(obj), "__cupy_get_ndarray__", None)


def with_device_views(value: Any) -> Any:
    """*value* (op arguments) with each object describing device memory read into a
    :class:`DeviceView`, and each wrapper of a remote array replaced by that array;
    containers are rebuilt, everything else is kept."""
    if type(value) is tuple or type(value) is list:
        return type(value)(with_device_views(v) for v in value)
    if type(value) is dict:
        return {k: with_device_views(v) for k, v in value.items()}
    getter = _array_getter(value)
    if getter is not None:
        array = getter(value)
        if isinstance(array, np.ndarray) or not hasattr(array, "_h"):
            raise TypeError(f"{type(value).__name__}.__cupy_get_ndarray__() returned "
                            f"{type(array).__name__}, not a cupy.ndarray")
        return array
    if _has_device_interface(value):
        try:
            return DeviceView(value)
        except AttributeError:   # a property that declines (a remote array's own)
            pass
    return value


def _handle_id(obj: Any) -> int | None:
    return int(obj) if type(obj) is Handle else None


def make_packer(handle_of: Callable[[Any], int | None] = _handle_id) -> msgpack.Packer:
    """A reusable packer; *handle_of* returns an id for remote array objects."""
    return msgpack.Packer(
        default=_encode_default(handle_of), strict_types=True, use_bin_type=True, autoreset=True
    )


def thread_packs(make: Callable[[], msgpack.Packer] = make_packer) -> Callable[[Any], bytes]:
    """A pack function whose Packer (made by *make*) is the calling thread's own.

    A Packer packs into one buffer it reuses, and its ``default`` is Python code, during
    which another thread may run: a second thread packing with the same Packer then wrote
    into that buffer, and each message took bytes of the other's. A client's heartbeat
    thread and its main thread (a held stretch falling back, its records' handles each a
    ``default`` call) did so, the beat went out undecodable, the door refused it, and the
    session was reported lost (docs/fair-share.md, "The lost session found")."""
    local = threading.local()

    def pack(value: Any) -> bytes:
        packer = getattr(local, "packer", None)
        if packer is None:
            packer = local.packer = make()
        return packer.pack(value)
    return pack


_pack_plain = thread_packs()


def packb(value: Any) -> bytes:
    """Encode a header or reply (handles only as :class:`Handle`), by the calling thread's
    own Packer (:func:`thread_packs`)."""
    return _pack_plain(value)


# ---------------------------------------------------------------- decoding


def ext_hook_for(resolve: Callable[[int], Any] | None,
                 view: Callable[..., Any] | None = None) -> Callable[[int, bytes], Any]:
    """Build the ``ext_hook`` that decodes our extensions.

    *resolve* turns a handle id into the object it names (the server's handle
    table); when None, handles decode as :class:`Handle`. *view* turns a device
    view's (pointer, shape, dtype, strides) into an array of the session's; without
    it a device view is refused.
    """

    hook = None
    for _ in range(MAX_NESTING + 1):  # innermost first: the deepest level has no inner hook
        hook = _ext_hook_at(resolve, hook, view)
    return hook


def _ext_hook_at(resolve: Callable[[int], Any] | None,
                 inner: Callable[[int, bytes], Any] | None,
                 view: Callable[..., Any] | None = None) -> Callable[[int, bytes], Any]:
    """One nesting level's ``ext_hook``; *inner* decodes the level below."""

    def unpack_nested(data: bytes) -> Any:
        if inner is None:
            raise CodecError(f"values nest more than {MAX_NESTING} tuples, slices or arrays deep")
        try:
            return msgpack.unpackb(data, ext_hook=inner, **UNPACK_OPTIONS)
        except CodecError:
            raise
        except ValueError as exc:  # msgpack's own: truncated, extra data, bad format, bad utf-8
            raise CodecError(f"malformed extension payload: {exc}") from None

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
            if data:
                raise CodecError("bad ellipsis")
            return Ellipsis
        if code == EXT_COMPLEX:
            if len(data) != 16:
                raise CodecError("bad complex")
            return complex(*_DD.unpack(data))
        if code == EXT_DTYPE:
            return check_dtype(data.decode("ascii", "replace"))
        if code == EXT_STRUCT_DTYPE:
            return check_dtype(unpack_nested(data))
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
            return array_from_buffer(parts[2], check_dtype(parts[0]), check_shape(parts[1])).copy()
        if code == EXT_BIGINT:
            if not _BIGINT.fullmatch(data):
                raise CodecError("bad integer")
            return int(data)
        if code == EXT_DEVICE_VIEW:
            parts = unpack_nested(data)
            if not (isinstance(parts, list) and len(parts) in (4, 5) and type(parts[0]) is int
                    and parts[0] >= 0 and parts[4:] in ([], [1])):
                raise CodecError("bad device view")
            if view is None:
                raise CodecError("a device view is not accepted here")
            strides = parts[3]
            if strides is not None and not (isinstance(strides, list) and len(strides) == len(parts[1])
                                            and all(type(n) is int for n in strides)):
                raise CodecError("bad device view strides")
            return view(parts[0], check_shape(parts[1]), check_dtype(parts[2]),
                        None if strides is None else tuple(strides), len(parts) == 5)
        raise CodecError(f"unknown extension type {code}")

    return hook


def check_shape(shape: Any) -> tuple[int, ...]:
    """Validate a peer's shape: a list of at most 64 non-negative ints."""
    if not isinstance(shape, (list, tuple)) or len(shape) > 64:
        raise CodecError(f"bad shape {shape!r}")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise CodecError(f"bad shape {shape!r}")
    return tuple(shape)


def array_from_buffer(buffer: Any, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """View a peer's raw bytes as an array of *shape*, or raise CodecError."""
    nbytes = memoryview(buffer).nbytes
    if math.prod(shape) * dt.itemsize != nbytes:
        raise CodecError(f"array data has {nbytes} bytes, its shape {shape} and dtype {dt} "
                         f"need {math.prod(shape) * dt.itemsize}")
    try:
        # not frombuffer(...).reshape(...): the array's base is then the buffer itself,
        # which the worker reports as owned data, as CuPy's asarray of host data is
        return np.ndarray(shape, dtype=dt, buffer=buffer)
    except ValueError as exc:  # e.g. (0, 2**62): empty, yet larger than NumPy allows
        raise CodecError(f"bad shape {shape}: {exc}") from None


def make_unpacker(resolve: Callable[[int], Any] | None = None) -> msgpack.Unpacker:
    """A streaming unpacker: ops are decoded one at a time, in order."""
    return msgpack.Unpacker(ext_hook=ext_hook_for(resolve), max_buffer_size=1 << 31, **UNPACK_OPTIONS)


_plain_hook = ext_hook_for(None)


def unpackb(data: bytes, any_keys: bool = False) -> Any:
    """Decode a header or reply; handles come back as :class:`Handle`. *any_keys*: maps
    may have keys other than strings (a worker's reply, whose values may be such maps;
    never what a client sent)."""
    if any_keys:
        return msgpack.unpackb(data, ext_hook=_plain_hook, **{**UNPACK_OPTIONS, "strict_map_key": False})
    return msgpack.unpackb(data, ext_hook=_plain_hook, **UNPACK_OPTIONS)
