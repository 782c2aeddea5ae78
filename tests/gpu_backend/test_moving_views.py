"""What graph replay reads of a held stretch's moving views (worker/moving_views.py): which
``getitem``s have parameter bounds, whether an op may write through one, which inputs its
ops may write (two inputs that share memory are refused only where one is written), and
which inputs only moving views slice (read where they are, not copied each replay). The
stretches are read from records as the worker reads an offer's."""

from __future__ import annotations

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.codec import Handle
from gpu_backend.worker.moving_views import moving_views, sliced_only, writable_inputs, written_through
from gpu_backend.worker.stretches import HeldStretch

OP, FN, METHOD = m.KIND_OPERATOR, m.KIND_FUNCTION, m.KIND_METHOD
ARRAY, NONE, VALUE = api.ARRAY, api.NONE, api.VALUE


def _stretch(*ops) -> HeldStretch:
    """Records of *ops*, each (kind, want, out handle or None, name, target, args, kwargs)."""
    return HeldStretch([((seq, kind, want, out, name), (target, list(args), kwargs or {}))
                        for seq, (kind, want, out, name, target, args, kwargs) in enumerate(ops)])


DATA, W, PREV = Handle(1), Handle(2), Handle(3)


def _sgd(*more):
    """``w -= 0.1 * prev.sum(0); xb = data[j:j + 8]; float((xb @ w).sum())`` and *more*."""
    return _stretch(
        (METHOD, ARRAY, 10, "sum", PREV, (0,), None),
        (OP, ARRAY, 11, "mul", None, (0.1, Handle(10)), None),
        (OP, NONE, None, "isub", None, (W, Handle(11)), None),
        (OP, ARRAY, 12, "getitem", None, (DATA, slice(16, 24)), None),
        (OP, ARRAY, 13, "matmul", None, (Handle(12), W), None),
        (METHOD, ARRAY, 14, "sum", Handle(13), (), None),
        (FN, VALUE, None, "float", None, (Handle(14),), None), *more)


def test_a_getitem_whose_bounds_are_parameters_is_a_moving_view():
    s = _sgd((OP, ARRAY, 15, "getitem", None, (DATA, (slice(None), 2)), None),
             (OP, ARRAY, 16, "getitem", None, (DATA, slice(None)), None))
    assert moving_views(s) == {3, 7}   # (not the slice of no int)
    assert s.params == 1 + 2 + 1


def test_the_weights_written_and_the_data_only_sliced():
    s = _sgd()
    views = moving_views(s)
    assert not written_through(s, views)
    data, w = s.recorded_inputs.index(DATA), s.recorded_inputs.index(W)
    assert writable_inputs(s) == {w}
    assert sliced_only(s, views, writable_inputs(s)) == {data: frozenset({3})}


def test_a_write_into_a_moving_view_or_a_view_of_it_is_found():
    inplace = _sgd((OP, NONE, None, "imul", None, (Handle(12), 2.0), None))
    assert written_through(inplace, moving_views(inplace))
    through_t = _sgd((METHOD, ARRAY, 20, "transpose", Handle(12), (), None),
                     (OP, NONE, None, "setitem", None, (Handle(20), 0, 1.0), None))
    assert written_through(through_t, moving_views(through_t))
    out = _sgd((FN, ARRAY, 21, "add", None, (W, 1.0), {"out": Handle(12)}))
    assert written_through(out, moving_views(out))
    # (a new array made from the view, written: not the view's memory)
    fresh = _sgd((OP, ARRAY, 22, "mul", None, (Handle(12), 2.0), None),
                 (OP, NONE, None, "iadd", None, (Handle(22), 1.0), None))
    assert not written_through(fresh, moving_views(fresh))
    for s in (inplace, through_t, out):   # the data is written: not only sliced
        data = s.recorded_inputs.index(DATA)
        assert data in writable_inputs(s)
        assert data not in sliced_only(s, moving_views(s), writable_inputs(s))


def test_a_write_into_the_sliced_data_after_the_view_is_made_counts_before_it_does_not():
    after = _sgd((OP, NONE, None, "iadd", None, (DATA, 1.0), None))
    assert written_through(after, moving_views(after))
    before = _stretch((OP, NONE, None, "iadd", None, (DATA, 1.0), None),
                      (OP, ARRAY, 12, "getitem", None, (DATA, slice(16, 24)), None),
                      (METHOD, ARRAY, 14, "sum", Handle(12), (), None),
                      (FN, VALUE, None, "float", None, (Handle(14),), None))
    assert not written_through(before, moving_views(before))
    # (through a view of the data the moving view slices: ``a = data[2:]; a[j:j + 4]``)
    nested = _stretch((OP, ARRAY, 20, "getitem", None, (DATA, slice(2, None)), None),
                      (OP, ARRAY, 21, "getitem", None, (Handle(20), slice(5, 9)), None),
                      (OP, NONE, None, "setitem", None, (DATA, 0, 1.0), None),
                      (METHOD, ARRAY, 22, "sum", Handle(21), (), None))
    assert written_through(nested, moving_views(nested))


def test_data_read_by_another_op_too_is_copied_as_ever():
    s = _sgd((METHOD, ARRAY, 30, "mean", DATA, (), None))
    assert sliced_only(s, moving_views(s), writable_inputs(s)) == {}
