"""Codec fuzzing: random and mutated bytes only ever raise the decode errors, never
build anything outside the closed set of types, and decoding is thread-safe.
(Split from test_codec.py, whose strategies and helpers it uses.)"""

from __future__ import annotations

import math
import threading

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_backend.protocol import codec
from gpu_backend.protocol.codec import EXT_HANDLE, CodecError

from tests.gpu_backend.test_codec import (DECODE_ERRORS, PACKER, ext, values)


# ------------------------------------------------------------------ random bytes

CLOSED_SET = (type(None), bool, int, float, str, bytes, list, dict, tuple, slice, type(Ellipsis),
              complex, np.dtype, np.generic, np.ndarray, type)


def assert_closed(value):
    """Decoding never builds anything outside the documented set of types."""
    assert isinstance(value, CLOSED_SET), type(value)
    if isinstance(value, type):
        assert value in (bool, int, float, complex) or (
            issubclass(value, np.generic) and np.dtype(value).kind in codec.ALLOWED_KINDS)
    elif isinstance(value, (np.generic, np.ndarray, np.dtype)):
        dt = value if isinstance(value, np.dtype) else value.dtype
        assert dt.kind in codec.ALLOWED_KINDS and dt.fields is None
    elif isinstance(value, (list, tuple)):
        for item in value:
            assert_closed(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            assert type(k) in (str, bytes)
            assert_closed(v)
    elif isinstance(value, slice):
        for part in (value.start, value.stop, value.step):
            assert_closed(part)


def decode_or_refuse(data: bytes) -> None:
    try:
        value = codec.unpackb(data)
    except Exception as exc:  # noqa: BLE001 - the class is what is checked
        assert type(exc) in DECODE_ERRORS, f"{type(exc).__name__}: {exc}"
        assert isinstance(exc, ValueError)
    else:
        assert_closed(value)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.binary(max_size=64))
def test_random_bytes_only_raise_decode_errors(data):
    decode_or_refuse(data)


@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(values, st.data())
def test_mutated_encodings_only_raise_decode_errors(value, data):
    encoded = bytearray(PACKER.pack(value))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        pos = data.draw(st.integers(0, len(encoded)))
        if kind == "flip" and pos < len(encoded):
            encoded[pos] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del encoded[pos:]
        elif kind == "insert":
            encoded[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete" and pos < len(encoded):
            del encoded[pos]
    decode_or_refuse(bytes(encoded))


def test_every_decode_error_class_is_reachable():
    """The asserted set is exactly what msgpack and the codec raise, nothing stale."""
    samples = {
        ValueError: b"\x92\x01",                       # incomplete input
        msgpack.ExtraData: b"\x01\x02",
        msgpack.FormatError: b"\xc1",
        msgpack.StackError: b"\x91" * 5000 + b"\xc0",
        UnicodeDecodeError: b"\xa1\xff",
        CodecError: ext(EXT_HANDLE, b""),
    }
    assert set(samples) == DECODE_ERRORS
    for cls, data in samples.items():
        with pytest.raises(ValueError) as info:
            codec.unpackb(data)
        assert type(info.value) is cls


def test_check_dtype_never_raises_anything_but_codec_error():
    specs = [",", "(", ")u,", "i4,i4", "(2,)i4", "[(", "{}", "M8[99999999999s]", "V-1",
             "U99999999999999", "<>f8", "f8 ", "\x00", "a", "a0", "O", "int,", "e" * 17,
             "=c,\n(", "<7|pY", "9^GY*c", 5, None, b"f8", ["f8"]]
    for spec in specs:
        with pytest.raises(CodecError):
            codec.check_dtype(spec)
    for spec in ["<f8", "|b1", "?", "float32", "int", "complex", "e", "g", "G", ">u2", "intp",
                 "bool", "<c16", "<f16", "int_"]:
        assert codec.check_dtype(spec).kind in codec.ALLOWED_KINDS


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(max_size=16))
def test_check_dtype_fuzz(spec):
    try:
        dt = codec.check_dtype(spec)
    except CodecError:
        return
    assert dt.fields is None and dt.subdtype is None
    assert dt.kind in codec.ALLOWED_KINDS or dt.name in codec.EXTENSION_NUMBERS   # bfloat16, by name


def test_decoding_is_thread_safe():
    """Hooks share no mutable state: concurrent decoders see only their own values."""
    blobs = [PACKER.pack(((i, (np.arange(i % 7, dtype=np.int32),)), slice(i, None)))
             for i in range(50)]
    errors: list = []

    def work():
        try:
            for _ in range(40):
                for i, blob in enumerate(blobs):
                    (n, (arr,)), s = codec.unpackb(blob)
                    assert n == i and arr.shape == (i % 7,) and s == slice(i, None)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_math_sanity_of_helpers():
    assert codec.check_shape([0, 2, 3]) == (0, 2, 3)
    a = codec.array_from_buffer(b"\0" * 24, np.dtype("<f8"), (3,))
    assert a.shape == (3,) and math.isclose(float(a.sum()), 0.0)
    with pytest.raises(CodecError):
        codec.array_from_buffer(b"\0" * 24, np.dtype("<f8"), (4,))
