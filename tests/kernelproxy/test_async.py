"""Asynchronous ops: errors at sync points, skipped work, frees in op order, warnings."""

import gc
import warnings

import numpy as np
import pytest

import kernelproxy
from kernelproxy.session import FLUSH_OPS


def test_async_error_names_the_op_and_line(cp, session):
    x = cp.zeros(3)
    x + cp.zeros(4)                                       # fails in the pool, not here
    with pytest.raises(ValueError) as info:
        session.sync()
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "operator +" in note and "test_async.py" in note


def test_error_surfaces_at_first_value_and_later_ops_are_skipped(cp, session):
    a = cp.ones(3)
    bad = a.reshape(7)                                    # ValueError in the pool
    after = a * 10                                        # issued after: never computed
    with pytest.raises(ValueError):
        float(a.sum())
    with pytest.raises(kernelproxy.InvalidHandleError, match="never computed: ndarray.reshape"):
        after.get()
    assert float(a.sum()) == 3.0                          # the session goes on
    del bad


def test_values_come_back_in_order_across_early_flushed_batches(cp, session):
    x = cp.zeros(4)
    for _ in range(FLUSH_OPS * 2 + 7):                    # several batches sent without waiting
        x = x + 1
    assert x.get().tolist() == [FLUSH_OPS * 2 + 7.0] * 4


def test_dropped_arrays_free_memory_in_op_order(cp, session):
    """Reassigning in a loop keeps one result alive, as locally: memory stays flat."""
    before = _memory(session)
    x = cp.zeros(1 << 18)                                 # 2 MiB
    for _ in range(50):
        x = x + 1
    session.sync()
    peak_bound = before + 3 * (1 << 21)
    assert _memory(session) <= peak_bound
    del x
    gc.collect()
    session.sync()
    assert _memory(session) <= before + 4096


def _memory(session):
    return session.memory_info()["memory_used"]


def test_remote_warnings_are_reemitted_with_category(cp, session, ref):
    if ref is not np:
        pytest.skip("GPUs raise no floating-point warnings")
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        y = cp.log(cp.zeros(2))
        session.sync()
    assert np.isneginf(y.get()).all()


def test_warning_points_at_the_users_line(cp, session, ref):
    if ref is not np:
        pytest.skip("GPUs raise no floating-point warnings")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp.log(cp.zeros(2))
        session.sync()
    assert caught and caught[0].filename.endswith("test_async.py")


def test_printing_does_not_transfer_the_array(cp, session):
    big = cp.zeros((2000, 2000))
    text = repr(big)
    assert text.startswith("array([[0., 0., 0., ..., 0., 0., 0.],") and len(text) < 1000


def test_memory_info(cp, session):
    info = session.memory_info()
    assert info["memory_limit"] == session.memory_limit and info["device"]["kind"] in ("numpy", "cupy")
    x = cp.zeros(1 << 17)                                 # 1 MiB
    assert session.memory_info()["memory_used"] >= info["memory_used"] + (1 << 20)
    del x


def test_value_later_waits_only_for_its_own_batch(session):
    """A pipelined loop: the value of step k is read after step k + 1 was sent."""
    from kernelproxy.modules import module_for
    cp = module_for(session)
    x = cp.arange(10, dtype=cp.float64)
    pending = []
    for step in range(5):
        x = x + 1
        pending.append(session.value_later("float", x.sum()))
        session.flush()
        if len(pending) == 2:
            assert session.result(pending.pop(0)) == sum(range(10)) + 10 * step
    assert session.result(pending.pop(0)) == sum(range(10)) + 50
    with pytest.raises(kernelproxy.InvalidHandleError):
        session.result(1)
    with pytest.raises(ValueError):
        session.value_later("exec", x)


def test_result_raises_an_earlier_ops_error(session):
    from kernelproxy.modules import module_for
    cp = module_for(session)
    a = cp.ones((2, 3))
    bad = a @ a          # shapes do not match: fails in the pool
    seq = session.value_later("float", a.sum())
    with pytest.raises(ValueError):
        session.result(seq)
    del bad
    assert float(a.sum()) == 6.0   # the session goes on
