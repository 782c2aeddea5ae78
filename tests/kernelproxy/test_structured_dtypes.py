"""Structured dtypes (issue 9: "structured dtypes where CuPy has them"): the wire carries a
structure as plain data (names, field specs, offsets, item size, alignment), each part
checked, never as NumPy's string forms; device arrays may be structures of numbers,
never of objects. End to end on a real pool: creation, upload and download, field
access and assignment, comparison."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol.codec import CodecError, check_dtype, device_dtype, dtype_spec, packb, unpackb

PLAIN = np.dtype([("a", "<i4"), ("b", "<f8")])
ALIGNED = np.dtype([("x", "i1"), ("y", "<f8")], align=True)
NESTED = np.dtype([("p", [("x", "<i4"), ("y", "<f4")], (3,)), ("q", "<c16")])
ALIGNED_PLAIN = np.dtype([("a", "<i4"), ("b", "<f8")], align=True)
SPARSE = np.dtype({"names": ["u", "v"], "formats": ["<u2", "<f4"], "offsets": [0, 8], "itemsize": 16})


@pytest.mark.parametrize("dt", [PLAIN, ALIGNED, NESTED, SPARSE, np.dtype("V10"), np.dtype("<f4"),
                                np.dtype([("m", "<f8", (2, 3))])])
def test_dtypes_travel_whole(dt):
    assert check_dtype(dtype_spec(dt)) == dt
    back = unpackb(packb(dt))
    assert back == dt and back.itemsize == dt.itemsize
    assert back.isalignedstruct == dt.isalignedstruct
    assert unpackb(packb(np.zeros(2, dt))).dtype == dt


@pytest.mark.parametrize("spec", [
    {"names": ["o"], "formats": ["|O"], "offsets": [0], "itemsize": 8, "aligned": False},
    {"names": ["a", "b"], "formats": ["<i4", "<i4"], "offsets": [0, 6], "itemsize": 8,
     "aligned": False},                                    # a field past the item's end
    {"names": ["a", "a"], "formats": ["<i4", "<i4"], "offsets": [0, 4], "itemsize": 8,
     "aligned": False},                                    # a name twice
    {"names": ["a"], "formats": ["<i4"], "offsets": [0], "itemsize": 4},   # a key missing
    {"names": ["a"], "formats": ["<i4"], "offsets": [0], "itemsize": 4, "aligned": False,
     "titles": ["t"]},                                     # an unknown key
    ["V", 0], ["V", 1 << 40], ["V", 1 << 31], ["sub", "<f4", [1 << 20, 1 << 20]], ["what", 1],
    ["sub", "<f8", [2]],                                   # a subarray only as a field
    {"names": ["s"], "formats": [["sub", ["V", (1 << 31) - 1], [1 << 24]]], "offsets": [0],
     "itemsize": 8, "aligned": False},
    {"names": ["s"], "formats": [["sub", "<f8", [0, 1 << 62, 1 << 62]]], "offsets": [0],
     "itemsize": 8, "aligned": False},
    {"names": ["v"], "formats": [["V", (1 << 31) - 1]], "offsets": [(1 << 31) - 2],
     "itemsize": (1 << 31) - 1, "aligned": False},
    "i4,f8", "[('a', 'i4')]", "(3,)f8",                    # NumPy's string forms
])
def test_bad_structures_are_refused(spec):
    with pytest.raises(CodecError):
        check_dtype(spec)


def test_nesting_and_size_are_bounded():
    spec: object = "<i4"
    for _ in range(12):
        spec = {"names": ["f"], "formats": [spec], "offsets": [0], "itemsize": 4, "aligned": False}
    with pytest.raises(CodecError, match="nest"):
        check_dtype(spec)
    many = {"names": [f"f{i}" for i in range(5000)], "formats": ["|i1"] * 5000,
            "offsets": list(range(5000)), "itemsize": 5000, "aligned": False}
    with pytest.raises(CodecError, match="fields"):
        check_dtype(many)


def test_what_a_device_array_may_hold():
    assert device_dtype(PLAIN) and device_dtype(NESTED) and device_dtype(np.dtype("V3"))
    assert not device_dtype(np.dtype([("a", "O")])) and not device_dtype(np.dtype("U3"))
    assert not device_dtype(np.dtype([("t", "M8[s]")]))
    with pytest.raises(ValueError, match="contains references"):
        packb(np.zeros(2, np.dtype([("a", "O")])))


def test_structured_arrays_through_the_pool(cp):
    z = cp.zeros(3, dtype=PLAIN)
    assert z.dtype == PLAIN and z.itemsize == 12
    host = np.array([(1, 2.0), (3, 4.5)], dtype=PLAIN)
    a = cp.asarray(host)
    np.testing.assert_array_equal(a.get(), host)
    np.testing.assert_array_equal(a["a"].get(), [1, 3])
    assert a["a"].dtype == np.int32
    aligned = cp.asarray(host.astype(ALIGNED_PLAIN))
    full = cp.full(2, host.astype(ALIGNED_PLAIN)[0], dtype=ALIGNED_PLAIN)   # (a kernel: aligned)
    assert full.get().tolist() == [(1, 2.0), (1, 2.0)]
    np.testing.assert_array_equal(aligned["b"].get(), [2.0, 4.5])
    aligned["b"] = 7
    np.testing.assert_array_equal(aligned.get()["b"], [7.0, 7.0])
    assert (aligned == aligned).get().all()   # (a packed one's kernel CuPy refuses: its f8 at offset 4)


@pytest.mark.parametrize("op", ["get", "set"])
def test_fields_cupy_refuses(cp, session, op):
    """CuPy's refusals, on either device: a field misaligned for the GPU (a packed
    structure's f8 at offset 4) and a subarray field; an unknown name in CuPy's words."""
    def access(array, field):
        if op == "get":
            array[field]
        else:
            array[field] = 1
        session.sync()   # the pool's error arrives with the batch
    packed = cp.zeros(2, dtype=PLAIN)
    with pytest.raises(ValueError, match="result array with dtype float64 would not be sufficiently aligned"):
        access(packed, "b")
    with pytest.raises(ValueError, match="CuPy does not yet support accessing nested subarrays"):
        access(cp.zeros(2, dtype=NESTED), "p")
    with pytest.raises(ValueError, match="no field name of zz"):
        access(packed, "zz")
    access(packed[:0], "b")   # an empty array: its alignment means nothing, CuPy's rule too
    assert int(cp.arange(4).sum()) == 6


def test_aligned_nested_and_void_arrays(cp):
    b = cp.empty(2, dtype=ALIGNED)
    assert b.dtype.isalignedstruct and b.itemsize == 16
    assert b["y"].dtype == np.float64 and b["y"].strides == (16,)
    c = cp.zeros(2, dtype=NESTED)
    assert c.dtype == NESTED and c.get()["p"].shape == (2, 3)
    v = cp.zeros(4, dtype="V10")
    assert v.dtype == np.dtype("V10") and v.nbytes == 40


@pytest.mark.parametrize("dt", [np.dtype([("o", "O")]), "i,O"])
def test_object_fields_are_refused_and_the_session_goes_on(cp, dt):
    with pytest.raises(ValueError, match="because it contains references"):   # CuPy's words
        cp.zeros(2, dtype=dt).get()
    with pytest.raises(ValueError, match="Unsupported dtype object"):
        cp.asarray(np.array([None, 1])).get()
    assert int(cp.arange(4).sum()) == 6
