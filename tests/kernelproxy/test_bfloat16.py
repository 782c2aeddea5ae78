"""bfloat16 arrays (issue 9; CuPy's bfloat16 is ml_dtypes'): the dtype travels by name
(its ``dtype.str`` is a raw void's), its arrays as bytes (NumPy exports no buffer of
it), both ways, small and streamed; arithmetic runs in the pool (ml_dtypes' loops on the
NumPy device, CuPy's kernels on a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol.codec import check_dtype, dtype_spec, packb, unpackb

ml_dtypes = pytest.importorskip("ml_dtypes", reason="the test extra installs ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


def test_the_dtype_scalars_and_arrays_travel():
    assert dtype_spec(BF16) == "bfloat16" and check_dtype("bfloat16") == BF16
    assert unpackb(packb(BF16)) == BF16
    assert unpackb(packb(ml_dtypes.bfloat16)) is ml_dtypes.bfloat16
    host = np.arange(5).astype(BF16)
    back = unpackb(packb(host))
    assert back.dtype == BF16 and (back == host).all()
    assert unpackb(packb(BF16.type(1.5))) == 1.5


def test_bfloat16_arrays_through_the_pool(cp):
    a = cp.arange(0, 5, 0.5, dtype=BF16)
    assert a.dtype == BF16
    np.testing.assert_array_equal(a.get().astype(np.float32), np.arange(0, 5, 0.5))
    b = cp.asarray(np.array([1, 2, 3], dtype=BF16))
    assert (b * 2).dtype == BF16
    np.testing.assert_array_equal((b * 2).get().astype(np.float32), [2, 4, 6])
    np.testing.assert_array_equal(b.astype(cp.float32).get(), [1, 2, 3])
    assert float(b.sum()) == 6.0


def test_large_bfloat16_transfers(cp):
    host = (np.arange(3_000_000) % 251).astype(BF16)   # above the streaming threshold
    x = cp.asarray(host)
    back = x.get()
    assert back.dtype == BF16 and (back == host).all()
