"""The wire codec: exact round trips, and refusals that are always CodecError.

Property tests (hypothesis) encode with ``make_packer`` and decode with
``unpackb`` / ``ext_hook_for``; the rejection tests craft extension payloads
by hand. Inputs that could crash the interpreter (deep nesting) are decoded in
a child process, so a regression fails one test instead of killing the run.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpu_backend.protocol import codec
from gpu_backend.protocol.codec import (EXT_BIGINT, EXT_COMPLEX, EXT_DTYPE, EXT_ELLIPSIS,
                                        EXT_HANDLE, EXT_NDARRAY, EXT_NPSCALAR, EXT_SLICE,
                                        EXT_TUPLE, EXT_TYPE, CodecError, Handle)
from gpu_backend.protocol.errors import InvalidHandleError
from tests.paths import PROJECT_ROOT

#: hypothesis warns that the nested strategies' reprs are long; they are.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

PACKER = codec.make_packer()

#: Every exception that decoding a peer's bytes may raise: msgpack's own
#: (incomplete input is a plain ValueError; ExtraData, FormatError and
#: StackError are ValueError subclasses), invalid UTF-8 in a str, and ours.
DECODE_ERRORS = frozenset({ValueError, msgpack.ExtraData, msgpack.FormatError,
                           msgpack.StackError, UnicodeDecodeError, CodecError})

NUMERIC_CHARS = "?bBhHiIlLqQefdgFDG"
NATIVE_DTYPES = [np.dtype(c) for c in NUMERIC_CHARS]
SWAPPED_DTYPES = [dt.newbyteorder(">" if dt.byteorder in "=<" else "<")
                  for dt in NATIVE_DTYPES if dt.itemsize > 1]
ALL_DTYPES = NATIVE_DTYPES + SWAPPED_DTYPES
SIZED_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
ALIAS_TYPES = [np.byte, np.ubyte, np.short, np.ushort, np.intc, np.uintc, np.int_, np.uint,
               np.longlong, np.ulonglong, np.intp, np.uintp, np.half, np.single, np.double,
               np.longdouble, np.csingle, np.cdouble, np.clongdouble]


def roundtrip(value):
    return codec.unpackb(PACKER.pack(value))


def ext(code: int, data: bytes) -> bytes:
    """An ext8 or ext32 record with any type code (msgpack.ExtType refuses negative codes)."""
    if len(data) < 256:
        return b"\xc7" + bytes([len(data), code & 0xFF]) + data
    return b"\xc9" + struct.pack(">I", len(data)) + bytes([code & 0xFF]) + data


def pack_plain(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def assert_same(expected, actual, path="value"):
    """Equal values of the same wire kind: exact bits for floats, dtypes with byte order."""
    if isinstance(expected, np.ndarray):
        assert type(actual) is np.ndarray, path
        assert actual.shape == expected.shape, path
        assert actual.dtype.str == expected.dtype.str, path
        assert actual.tobytes() == expected.tobytes(), path
    elif isinstance(expected, np.generic):
        assert isinstance(actual, np.generic), path
        assert actual.dtype == expected.dtype, path
        assert actual.tobytes() == expected.tobytes(), path
    elif isinstance(expected, np.dtype):
        assert isinstance(actual, np.dtype) and actual == expected and actual.str == expected.str, path
    elif isinstance(expected, type):
        assert isinstance(actual, type), path
        if issubclass(expected, np.generic):
            assert np.dtype(actual) == np.dtype(expected), path
        else:
            assert actual is expected, path
    elif isinstance(expected, Handle):
        assert type(actual) is Handle and int(actual) == int(expected), path
    elif type(expected) is float:
        assert type(actual) is float and struct.pack("<d", actual) == struct.pack("<d", expected), path
    elif type(expected) is complex:
        assert type(actual) is complex, path
        assert struct.pack("<dd", actual.real, actual.imag) == struct.pack(
            "<dd", expected.real, expected.imag), path
    elif isinstance(expected, slice):
        assert type(actual) is slice, path
        for part in ("start", "stop", "step"):
            assert_same(getattr(expected, part), getattr(actual, part), f"{path}.{part}")
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), f"{path}: {type(actual).__name__}"
        assert len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert type(actual) is dict and list(actual) == list(expected), path
        for k in expected:
            assert_same(expected[k], actual[k], f"{path}[{k!r}]")
    else:
        assert type(actual) is type(expected) and actual == expected, f"{path}: {actual!r}"


# ------------------------------------------------------------------ strategies

big_ints = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400 - 1), max_value=10**400 - 1),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1,
                     10**400 - 1, -(10**400 - 1)]),
)
dtypes = st.sampled_from(ALL_DTYPES)
scalar_types = st.sampled_from(SIZED_TYPES + ALIAS_TYPES)
np_scalars = st.sampled_from(NATIVE_DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, ()).map(lambda a: a[()]))
np_arrays = st.one_of(
    hnp.arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)),
    # non-contiguous layouts travel as C-order copies
    hnp.arrays(dtypes, hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=5)).map(
        lambda a: a.T),
    hnp.arrays(dtypes, st.integers(0, 12)).map(lambda a: a[::2]),
)
handles = st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Handle)
small = st.one_of(st.none(), st.integers(-10**6, 10**6))
slices = st.builds(slice, small, small, small)

leaves = st.one_of(
    st.none(), st.booleans(), big_ints, st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.binary(max_size=8), slices, st.just(Ellipsis), dtypes, scalar_types,
    st.sampled_from([bool, int, float, complex]), np_scalars, np_arrays, handles,
)


def nested(depth: int):
    """Values nesting containers at most *depth* deep (well inside codec.MAX_NESTING)."""
    if depth == 0:
        return leaves
    child = nested(depth - 1)
    return st.one_of(
        leaves,
        st.lists(child, max_size=3),
        st.lists(child, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), child, max_size=3),
    )


values = nested(4)
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------ round trips

@SETTINGS
@given(values)
def test_roundtrip_any_value(value):
    assert_same(value, roundtrip(value))


@SETTINGS
@given(st.lists(values, max_size=5))
def test_tuple_and_list_stay_distinct(items):
    out = roundtrip([items, tuple(items), (items,), [tuple(items)]])
    assert type(out[0]) is list and type(out[1]) is tuple
    assert type(out[2]) is tuple and type(out[2][0]) is list
    assert type(out[3]) is list and type(out[3][0]) is tuple
    assert_same([items, tuple(items), (items,), [tuple(items)]], out)


@SETTINGS
@given(big_ints)
def test_ints_of_any_size(n):
    out = roundtrip(n)
    assert type(out) is int and out == n


@SETTINGS
@given(st.floats(allow_nan=True, allow_infinity=True),
       st.complex_numbers(allow_nan=True, allow_infinity=True))
def test_floats_and_complex_keep_their_bits(x, z):
    assert_same((x, z, float("nan"), float("inf"), -float("inf"), -0.0), roundtrip(
        (x, z, float("nan"), float("inf"), -float("inf"), -0.0)))


@SETTINGS
@given(np_arrays)
def test_arrays_keep_shape_dtype_and_values(a):
    out = roundtrip(a)
    assert_same(np.ascontiguousarray(a) if a.ndim else a, out)
    assert out.flags.writeable and out.flags.c_contiguous


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.str)
def test_zero_d_and_empty_arrays(dt):
    for a in (np.zeros((), dt), np.ones((), dt), np.zeros(0, dt), np.zeros((3, 0, 2), dt),
              np.zeros((0,) * 5, dt)):
        out = roundtrip(a)
        assert out.shape == a.shape and out.dtype.str == a.dtype.str
        assert out.tobytes() == a.tobytes()


@pytest.mark.parametrize("dt", NATIVE_DTYPES, ids=lambda d: d.char)
def test_numpy_scalars_of_every_numeric_dtype(dt):
    for v in (0, 1, -1 if dt.kind in "if" else 1, np.iinfo(dt).max if dt.kind in "iu" else 1.5):
        scalar = dt.type(v)
        out = roundtrip(scalar)
        assert isinstance(out, np.generic) and out.dtype == dt and out.tobytes() == scalar.tobytes()
        if type(scalar) in SIZED_TYPES:  # np.longlong may come back as np.int64
            assert type(out) is type(scalar)
    if dt.kind in "fc":
        nan = roundtrip(dt.type(complex("nan+nanj") if dt.kind == "c" else float("nan")))
        assert np.isnan(nan) and nan.dtype == dt


def test_dtypes_and_scalar_types():
    for t in SIZED_TYPES:
        assert roundtrip(t) is t, t
        assert roundtrip(np.dtype(t)) == np.dtype(t)
    for t in ALIAS_TYPES:  # np.longlong may come back as np.int64: the same dtype
        assert np.dtype(roundtrip(t)) == np.dtype(t), t
    for t in (bool, int, float, complex):
        assert roundtrip(t) is t
    assert roundtrip(np.float32) is np.float32
    assert roundtrip([np.float32, (np.dtype(">i4"),)]) == [np.float32, (np.dtype(">i4"),)]
    assert roundtrip(np.dtype(">i4")).str == ">i4"


def test_slices_ellipsis_and_handles():
    assert roundtrip((slice(None), Ellipsis, slice(1, -1, 2))) == (
        slice(None), Ellipsis, slice(1, -1, 2))
    out = roundtrip([Handle(7), (Handle(-3), slice(Handle(1), None))])
    assert type(out[0]) is Handle and out[0] == 7
    assert type(out[1][0]) is Handle and out[1][0] == -3
    assert type(out[1][1].start) is Handle
    # a plain int stays an int, not a handle
    assert type(roundtrip(7)) is int


def test_custom_handle_of_and_resolve():
    class Remote:
        def __init__(self, hid):
            self.hid = hid

    packer = codec.make_packer(lambda obj: obj.hid if isinstance(obj, Remote) else None)
    data = packer.pack([Remote(5), (Remote(9), 1)])
    assert msgpack.unpackb(data, ext_hook=codec.ext_hook_for(None), raw=False) == [5, (9, 1)]
    table = {5: "five", 9: "nine"}
    hook = codec.ext_hook_for(lambda hid: table[hid])
    assert msgpack.unpackb(data, ext_hook=hook, raw=False) == ["five", ("nine", 1)]


def test_resolve_errors_are_not_turned_into_codec_errors():
    """A missing handle, even deep in a tuple, stays the resolver's InvalidHandleError."""
    def resolve(hid):
        raise InvalidHandleError(f"no array {hid}")

    data = PACKER.pack(((((Handle(4),),),),))
    with pytest.raises(InvalidHandleError):
        msgpack.unpackb(data, ext_hook=codec.ext_hook_for(resolve), raw=False)


def test_streaming_unpacker_decodes_in_order():
    items = [1, (2, 3), np.arange(4), Handle(2), {"k": slice(1, 2)}]
    unpacker = codec.make_unpacker()
    unpacker.feed(b"".join(PACKER.pack(v) for v in items))
    assert_same(items, list(unpacker))


def test_nesting_up_to_the_limit_round_trips():
    value = ()
    for _ in range(codec.MAX_NESTING - 1):
        value = (value,)
    assert roundtrip(value) == value  # MAX_NESTING tuples in all
    assert_same((((np.arange(3.0),),),), roundtrip((((np.arange(3.0),),),)))


# ------------------------------------------------------------------ encode refusals

#: (Structures of numbers and raw voids travel since issue 9: tests/kernelproxy/test_structured_dtypes.py.)
NON_NUMERIC_VALUES = [
    np.array(["a", "bc"]), np.array([b"a"]), np.array([None, 1], dtype=object),
    np.zeros(2, [("a", "<i4"), ("o", "O")]), np.zeros(2, [("t", "M8[s]")]),
    np.zeros(2, "M8[s]"), np.zeros(2, "m8[s]"), np.zeros((), object),
    np.dtype("O"), np.dtype("U3"), np.dtype("S2"), np.dtype([("a", "<i4"), ("s", "U2")]),
    np.dtype("(2,)O"), np.dtype("(2,)i4"), np.dtype("M8[s]"), np.dtype("m8"),
    np.str_("a"), np.bytes_(b"a"), np.datetime64("2020-01-01"),
    np.timedelta64(1, "s"), np.zeros(1, [("a", "<i4"), ("o", "O")])[0],
    np.object_, np.str_, np.bytes_, np.void, np.datetime64, np.timedelta64,
    object, str, bytes, memoryview, type,   # Python classes as dtypes: object, "<U0", ..., as CuPy
]


@pytest.mark.parametrize("value", NON_NUMERIC_VALUES, ids=repr)
def test_non_numeric_dtypes_are_refused_on_encode(value):
    with pytest.raises(ValueError, match="Unsupported dtype"):   # CuPy's refusal
        PACKER.pack(value)
    with pytest.raises(ValueError, match="Unsupported dtype"):  # also inside containers
        PACKER.pack([1, (2, {"x": value})])


@pytest.mark.parametrize("value", [object(), {1, 2}, frozenset(), lambda: 0, NotImplemented],
                         ids=["object", "set", "frozenset", "lambda", "NotImplemented"])
def test_other_python_objects_are_refused_on_encode(value):
    with pytest.raises(TypeError):
        PACKER.pack(value)


def test_too_deep_or_too_large_values_are_refused_on_encode():
    value = ()
    for _ in range(codec.MAX_NESTING):
        value = (value,)
    with pytest.raises(ValueError):
        PACKER.pack(value)  # MAX_NESTING + 1 tuples
    with pytest.raises(OverflowError):
        PACKER.pack(10**codec.MAX_BIGINT_DIGITS)
    with pytest.raises(OverflowError):
        PACKER.pack(-(10**codec.MAX_BIGINT_DIGITS))


# ------------------------------------------------------------------ decode refusals

NON_NUMERIC_SPECS = [b"|O", b"O", b"<U3", b"U", b"|S2", b"S", b"|V8", b"V", b"i4,f8", b"(2,)i4",
                     b"<M8[s]", b"<m8", b"M", b"object", b"str", b"bytes", b"void",
                     b"datetime64", b"a", b"a4", b"[('a','<i4')]"]


@pytest.mark.parametrize("spec", NON_NUMERIC_SPECS, ids=repr)
def test_non_numeric_dtypes_are_refused_on_decode(spec):
    for data in (ext(EXT_DTYPE, spec), ext(EXT_TYPE, spec),
                 ext(EXT_NPSCALAR, pack_plain([spec.decode(), b"\0" * 8])),
                 ext(EXT_NDARRAY, pack_plain([spec.decode(), [1], b"\0" * 8])),
                 ext(EXT_NDARRAY, pack_plain([spec.decode(), [], b"\0" * 4]))):
        with pytest.raises(CodecError):
            codec.unpackb(data)


BAD_PAYLOADS = {
    "handle, empty": ext(EXT_HANDLE, b""),
    "handle, 7 bytes": ext(EXT_HANDLE, b"\0" * 7),
    "handle, 9 bytes": ext(EXT_HANDLE, b"\0" * 9),
    "complex, 8 bytes": ext(EXT_COMPLEX, b"\0" * 8),
    "complex, 17 bytes": ext(EXT_COMPLEX, b"\0" * 17),
    "ellipsis with data": ext(EXT_ELLIPSIS, b"x"),
    "tuple, not a list": ext(EXT_TUPLE, pack_plain(5)),
    "tuple, a map": ext(EXT_TUPLE, pack_plain({"a": 1})),
    "tuple, empty payload": ext(EXT_TUPLE, b""),
    "tuple, truncated": ext(EXT_TUPLE, b"\x92\x01"),
    "tuple, extra data": ext(EXT_TUPLE, pack_plain([1]) + b"\x01"),
    "tuple, reserved byte": ext(EXT_TUPLE, b"\xc1"),
    "tuple, bad utf-8": ext(EXT_TUPLE, b"\x91\xa1\xff"),
    "tuple, int map key": ext(EXT_TUPLE, b"\x91\x81\x01\x01"),
    "tuple, nested lists too deep": ext(EXT_TUPLE, b"\x91" * 3000 + b"\xc0"),
    "slice, two parts": ext(EXT_SLICE, pack_plain([1, 2])),
    "slice, four parts": ext(EXT_SLICE, pack_plain([1, 2, 3, 4])),
    "slice, not a list": ext(EXT_SLICE, pack_plain(3)),
    "slice, empty payload": ext(EXT_SLICE, b""),
    "dtype, empty": ext(EXT_DTYPE, b""),
    "dtype, too long": ext(EXT_DTYPE, b"<f8" * 6),
    "dtype, not ascii": ext(EXT_DTYPE, b"\xff\xfe"),
    "dtype, python syntax": ext(EXT_DTYPE, b","),
    "dtype, unknown format": ext(EXT_DTYPE, b"9^GY*c"),
    "dtype, bad byte order": ext(EXT_DTYPE, b"<7|pY"),
    "type, unknown": ext(EXT_TYPE, b"float7"),
    "scalar, short": ext(EXT_NPSCALAR, pack_plain(["<f4", b"\0" * 3])),
    "scalar, long": ext(EXT_NPSCALAR, pack_plain(["<f4", b"\0" * 5])),
    "scalar, one part": ext(EXT_NPSCALAR, pack_plain(["<f4"])),
    "scalar, str data": ext(EXT_NPSCALAR, pack_plain(["<f4", "abcd"])),
    "scalar, int dtype": ext(EXT_NPSCALAR, pack_plain([5, b"\0" * 4])),
    "array, too few bytes": ext(EXT_NDARRAY, pack_plain(["<f4", [2], b"\0" * 4])),
    "array, too many bytes": ext(EXT_NDARRAY, pack_plain(["<f4", [1], b"\0" * 8])),
    "array, bytes for an empty shape": ext(EXT_NDARRAY, pack_plain(["<f4", [0], b"\0" * 4])),
    "array, 0-d without bytes": ext(EXT_NDARRAY, pack_plain(["<f4", [], b""])),
    "array, negative dim": ext(EXT_NDARRAY, pack_plain(["<f4", [-1], b""])),
    "array, float dim": ext(EXT_NDARRAY, pack_plain(["<f4", [1.0], b"\0" * 4])),
    "array, bool dim": ext(EXT_NDARRAY, pack_plain(["<f4", [True], b"\0" * 4])),
    "array, str dim": ext(EXT_NDARRAY, pack_plain(["<f4", ["1"], b"\0" * 4])),
    "array, shape not a list": ext(EXT_NDARRAY, pack_plain(["<f4", 1, b"\0" * 4])),
    "array, 65 dims": ext(EXT_NDARRAY, pack_plain(["<f4", [1] * 65, b"\0" * 4])),
    "array, product wraps int64": ext(EXT_NDARRAY, pack_plain(["<f8", [2**32, 2**32], b""])),
    "array, dim beyond int64": ext(EXT_NDARRAY, pack_plain(["<f8", [2**64 - 1, 1], b""])),
    "array, empty but too big": ext(EXT_NDARRAY, pack_plain(["<f8", [0, 2**62], b""])),
    "array, empty, dim beyond uint64": ext(EXT_NDARRAY, b"\x93\xa3<f8\x92\x00"
                                           + ext(EXT_BIGINT, b"1" + b"0" * 30) + b"\xc4\x00"),
    "array, data not bytes": ext(EXT_NDARRAY, pack_plain(["<f4", [1], "abcd"])),
    "array, two parts": ext(EXT_NDARRAY, pack_plain(["<f4", [1]])),
    "bigint, 401 digits": ext(EXT_BIGINT, b"9" * (codec.MAX_BIGINT_DIGITS + 1)),
    "bigint, -401 digits": ext(EXT_BIGINT, b"-" + b"9" * (codec.MAX_BIGINT_DIGITS + 1)),
    "bigint, 5000 digits": ext(EXT_BIGINT, b"9" * 5000),
    "bigint, empty": ext(EXT_BIGINT, b""),
    "bigint, minus only": ext(EXT_BIGINT, b"-"),
    "bigint, double minus": ext(EXT_BIGINT, b"--5"),
    "bigint, plus": ext(EXT_BIGINT, b"+5"),
    "bigint, spaces": ext(EXT_BIGINT, b" 5"),
    "bigint, newline": ext(EXT_BIGINT, b"5\n"),
    "bigint, underscore": ext(EXT_BIGINT, b"1_000"),
    "bigint, hex": ext(EXT_BIGINT, b"0x10"),
    "bigint, arabic digit": ext(EXT_BIGINT, "\u0663".encode()),
    "bigint, not ascii": ext(EXT_BIGINT, b"\xff"),
}


@pytest.mark.parametrize("data", BAD_PAYLOADS.values(), ids=BAD_PAYLOADS.keys())
def test_malformed_extension_payloads_raise_codec_error(data):
    with pytest.raises(CodecError):
        codec.unpackb(data)
    with pytest.raises(CodecError):  # also when nested inside our own extensions
        codec.unpackb(ext(EXT_TUPLE, b"\x92\x01" + data))
    with pytest.raises(CodecError):  # and through the streaming unpacker the worker uses
        unpacker = codec.make_unpacker(lambda hid: hid)
        unpacker.feed(b"\x91" + data)
        unpacker.unpack()


def test_biggest_allowed_bigint_decodes():
    data = ext(EXT_BIGINT, b"-" + b"9" * codec.MAX_BIGINT_DIGITS)
    assert codec.unpackb(data) == -(10**codec.MAX_BIGINT_DIGITS - 1)


KNOWN_CODES = {EXT_HANDLE, EXT_TUPLE, EXT_SLICE, EXT_ELLIPSIS, EXT_COMPLEX, EXT_DTYPE, EXT_TYPE,
               EXT_NPSCALAR, EXT_NDARRAY, EXT_BIGINT}


@pytest.mark.parametrize("code", [c for c in range(-128, 128) if c not in KNOWN_CODES and c != -1])
def test_unknown_extension_codes_raise_codec_error(code):
    for data in (b"", b"\0" * 8, pack_plain([1, 2])):
        with pytest.raises(CodecError):
            codec.unpackb(ext(code, data))


def test_msgpack_timestamp_extension_stays_in_the_closed_set():
    """Ext -1 is decoded by msgpack itself, before any hook: as an int (or refused)."""
    value = codec.unpackb(b"\xd6\xff\x00\x00\x00\x01")  # timestamp32: 1 s
    assert type(value) is int and value == 10**9
    assert type(codec.unpackb(ext(EXT_TUPLE, b"\x91\xd6\xff\x00\x00\x00\x01"))[0]) is int
    for bad in (ext(-1, b""), ext(-1, b"\0\0\0"), ext(-1, b"\0" * 5)):
        with pytest.raises(ValueError):
            codec.unpackb(bad)


def _nested_tuples(levels: int, innermost: bytes = b"\x90") -> bytes:
    data = innermost
    for _ in range(levels):
        data = b"\x91" + ext(EXT_TUPLE, data)
    return data


def test_nesting_beyond_the_limit_is_refused_not_a_crash():
    """Deep nesting used to overflow the C stack (segfault) around 200 levels."""
    script = textwrap.dedent(f"""
        import sys
        from gpu_backend.protocol import codec
        from tests.gpu_backend.test_codec import _nested_tuples
        for levels in (codec.MAX_NESTING + 1, 200, 1000, 5000):
            try:
                codec.unpackb(_nested_tuples(levels))
            except codec.CodecError:
                continue
            sys.exit(f"{{levels}} levels decoded")
        # deep plain lists inside the deepest allowed tuples: msgpack's own stack limit
        try:
            codec.unpackb(_nested_tuples(codec.MAX_NESTING, b"\\x91" * 3000 + b"\\xc0"))
        except codec.CodecError:
            pass
        else:
            sys.exit("deep lists decoded")
        print("refused")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=_repo_root())
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.strip() == "refused"


def test_deepest_allowed_nesting_fits_a_small_thread_stack():
    data = _nested_tuples(codec.MAX_NESTING)
    script = textwrap.dedent(f"""
        import threading
        from gpu_backend.protocol import codec
        threading.stack_size(1 << 20)
        out = []
        t = threading.Thread(target=lambda: out.append(codec.unpackb({data!r})))
        t.start(); t.join()
        print(len(out))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=_repo_root())
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.strip() == "1"


def _repo_root() -> str:
    return str(PROJECT_ROOT)


def test_a_map_of_a_dict_subclass_travels_as_a_plain_map():
    """A kernel's fixed definition (kernelproxy.stretch_key.FixedDefinition) is a dict
    subclass, which msgpack's strict types hand to the encoder's default."""
    class Fixed(dict):
        pass

    value = Fixed(name="f", ops=[["o", "add", None, [[0, 0], [1, 2.5]], {}]], axis=(0, 1))
    decoded = codec.unpackb(codec.packb([value]))[0]
    assert type(decoded) is dict and decoded == dict(value)
