"""``float``, ``int``, ``bool`` and ``complex`` of a 0-d array, every dtype, through the pool
against the reference (NumPy in CI, local CuPy on a GPU: there the worker reads them
through a pinned buffer of its own, devices/cupy_scalar_reads.py): the same value and
type, the same warning, the same error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

#: (dtype, a value of it): extremes and signs where a conversion could slip
_VALUES = [
    ("bool", True), ("bool", False),
    ("int8", -128), ("uint8", 255), ("int16", -32768), ("uint16", 65535),
    ("int32", -(2 ** 31)), ("uint32", 2 ** 32 - 1), ("int64", -(2 ** 63)), ("uint64", 2 ** 64 - 1),
    ("float16", 65504.0), ("float32", -0.0), ("float32", 1e-45), ("float64", float("inf")),
    ("float64", -1.5e308), ("complex64", complex(1.5, -2.0)), ("complex128", complex(-0.0, 3.0)),
]


def _read(xp, dtype, value, convert):
    # (a 0-d array, as CuPy's x[()] is; uploaded as one element: local CuPy's asarray of a
    # 0-d NumPy array loses the sign of -0.0, CuPy 14.2 on an H200)
    a = xp.asarray(np.array([value], dtype=dtype)).reshape(())
    assert a.ndim == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = convert(a)
        except (TypeError, ValueError, OverflowError) as exc:
            return ("raises", type(exc).__name__, [w.category.__name__ for w in caught])
    return (type(out).__name__, repr(out), [w.category.__name__ for w in caught])


@pytest.mark.parametrize("dtype,value", _VALUES)
@pytest.mark.parametrize("convert", [float, int, bool, complex], ids=lambda f: f.__name__)
def test_a_0d_arrays_value_reads_as_the_reference_reads_it(cp, ref, dtype, value, convert):
    """(A complex array's float or int raises TypeError for a 0-d array, int of inf
    OverflowError: on both sides alike.)"""
    assert _read(cp, dtype, value, convert) == _read(ref, dtype, value, convert)


def test_a_read_after_many_queued_ops_waits_for_them(cp, ref):
    """The read waits for the session's stream: the value is the last op's."""
    def run(xp):
        x = xp.zeros((), dtype=xp.float64)
        for step in range(200):
            x = x + step
        return float(x)
    assert run(cp) == run(ref) == float(sum(range(200)))
