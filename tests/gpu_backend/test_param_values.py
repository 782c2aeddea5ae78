"""A captured stretch's parameter values (worker/param_values.py): written into their
places only where they changed, and never found unchanged when their bits would differ.
Real NumPy views into one host block, as graph replay makes them."""

from __future__ import annotations

import numpy as np

from gpu_backend.worker.param_values import ParamValues


def _values(*dtypes) -> tuple[ParamValues, np.ndarray]:
    host = np.zeros(16 * len(dtypes), np.uint8)
    values = ParamValues()
    for n, dtype in enumerate(dtypes):
        dtype = np.dtype(dtype)
        values.add(n, host[16 * n:16 * n + dtype.itemsize].view(dtype).reshape(()), 0)
    values.dirty = False   # (as after the block's copy to the device)
    return values, host


def test_the_same_values_write_nothing_and_leave_the_block_clean():
    values, host = _values(np.float32, np.int64)
    assert values.write([0.5, 7]) and values.dirty
    values.dirty = False
    before = host.tobytes()
    assert values.write([0.5, 7]) and not values.dirty and host.tobytes() == before
    assert values.write([0.25, 7]) and values.dirty
    assert float(values.views[0]) == 0.25


def test_a_zero_is_always_written_its_sign_kept():
    values, host = _values(np.float64)
    for value in (0.0, -0.0, -0.0, 0.0, 1.5, -0.0):
        values.dirty = False
        assert values.write([value])
        assert np.signbit(values.views[0]) == np.signbit(value)
        assert values.dirty   # (a zero is never taken as unchanged)


def test_a_write_that_fails_part_way_leaves_no_value_taken_as_unchanged():
    """The first value goes in, the second does not fit (OverflowError): the replay's
    guards fail. The list before must then be written again, not found unchanged."""
    values, _host = _values(np.uint8, np.uint8)
    assert values.write([1, 1])
    assert not values.write([2, 300])
    assert int(values.views[0]) == 2   # (the first went in before the second failed)
    assert values.write([1, 1])
    assert (int(values.views[0]), int(values.views[1])) == (1, 1)


def test_values_not_numbers_fail_the_guards():
    values, _host = _values(np.float32)
    assert not values.write(["x"])
    assert not values.write([None])
    assert values.write([np.float32(2.5)]) and float(values.views[0]) == 2.5
