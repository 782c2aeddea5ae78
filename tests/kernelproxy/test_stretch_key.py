"""A stretch's key (kernelproxy.stretch_key): two iterations of a loop have one key, their
inputs and scalar operands apart; anything that changes what runs changes the key. Arrays
are a real session's (the NumPy pool); the key is built from the same arguments the
session submits."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from kernelproxy.stretch_key import UNKEYABLE, StretchKey

OP, FN, METHOD = m.KIND_OPERATOR, m.KIND_FUNCTION, m.KIND_METHOD
ARRAY, VALUE = api.ARRAY, api.VALUE


def _step(session, x, alpha, *, axis=0, free=True):
    """``y = x * alpha; z = y + 1; s = z.sum(axis=axis)`` run for real, each op added to a
    key with the arguments and result handle the session submitted it with."""
    key = StretchKey(session._handle_of)
    y = x * alpha
    key.add_op(OP, ARRAY, y._h, "mul", None, (x, alpha), {})
    z = y + 1
    key.add_op(OP, ARRAY, z._h, "add", None, (y, 1), {})
    s = z.sum(axis=axis)
    key.add_op(METHOD, ARRAY, s._h, "sum", z, (), {"axis": axis})
    if free:
        key.add_free(y._h)
    return key


def test_two_iterations_have_one_key_and_their_own_inputs_and_scalars(cp, session):
    a, b = cp.ones((4, 3)), cp.zeros((4, 3))
    first, second = _step(session, a, 0.5), _step(session, b, 0.25)
    assert first.key() == second.key() != UNKEYABLE
    assert first.inputs == [a._h] and second.inputs == [b._h]
    assert first.params == [0.5, 1] and second.params == [0.25, 1]


@pytest.mark.parametrize("change", ["int scalar", "axis", "no free", "numpy scalar"])
def test_what_changes_what_runs_changes_the_key(cp, session, change):
    a = cp.ones((4, 3))
    base = _step(session, a, 0.5).key()
    other = {"int scalar": lambda: _step(session, a, 2),
             "axis": lambda: _step(session, a, 0.5, axis=1),
             "no free": lambda: _step(session, a, 0.5, free=False),
             "numpy scalar": lambda: _step(session, a, np.float32(0.5))}[change]()
    assert other.key() != base


def test_roles_tell_inputs_from_results_and_the_same_input_twice(cp, session):
    a, b = cp.ones(3), cp.ones(3)
    key = StretchKey(session._handle_of)
    r = a + b
    key.add_op(OP, ARRAY, r._h, "add", None, (a, b), {})
    key.add_op(OP, ARRAY, session.new_id(), "mul", None, (r, a), {})
    assert key.records[0][3] == (("i", 0), ("i", 1))
    assert key.records[1][3] == (("r", 0), ("i", 0))
    assert key.inputs == [a._h, b._h]
    # the same op on one array twice is another stretch than on two arrays
    same = StretchKey(session._handle_of)
    same.add_op(OP, ARRAY, session.new_id(), "add", None, (a, a), {})
    assert same.records[0][3] == (("i", 0), ("i", 0))


def test_literals_are_part_of_the_key_with_their_types(cp, session):
    u = cp.ones((6, 6))

    def sliced(index):
        key = StretchKey(session._handle_of)
        key.add_op(OP, ARRAY, session.new_id(), "getitem", None, (u, index), {})
        return key.key()

    assert sliced((slice(1, -1), slice(None))) == sliced((slice(1, -1), slice(None)))
    # (a basic index's ints are parameters, protocol/stretches.basic_index: its Nones, its
    # steps and the kind of each part stay in the key)
    assert sliced((slice(1, -1), slice(None))) == sliced((slice(2, -1), slice(None)))
    assert sliced(slice(1, None)) != sliced(slice(1, 5))
    assert sliced(slice(0, 4, 2)) != sliced(slice(0, 4, 1))
    assert sliced(1) != sliced(1.0) != sliced(True)
    assert sliced(1) != sliced(np.int64(1))

    def summed(**kwargs):
        key = StretchKey(session._handle_of)
        key.add_op(FN, ARRAY, session.new_id(), "sum", None, (u,), kwargs)
        return key.key()

    assert summed(dtype=np.float32) == summed(dtype=np.dtype("float32"))
    assert summed(dtype=np.float32) != summed(dtype=np.float64)
    assert summed(keepdims=True) != summed(keepdims=False)


def test_a_value_no_key_can_express_makes_the_stretch_unkeyable(cp, session):
    key = StretchKey(session._handle_of)
    key.add_op(FN, ARRAY, session.new_id(), "asarray", None, (np.ones(3),), {})
    assert key.key() == UNKEYABLE
    key.add_op(OP, ARRAY, session.new_id(), "add", None, (cp.ones(3), 1), {})   # stays so
    assert key.key() == UNKEYABLE


def test_an_array_of_another_session_makes_the_stretch_unkeyable(cp, session, pool):
    """The session refuses it when it packs the op (before the key sees it); a key never
    raises: what it cannot hold makes the stretch unkeyable."""
    import kernelproxy
    from kernelproxy.modules import module_for

    other = kernelproxy.connect(pool.address, pool.token)
    try:
        foreign = module_for(other).ones(3)
        key = StretchKey(session._handle_of)
        key.add_op(OP, ARRAY, session.new_id(), "add", None, (foreign, 1), {})
        assert key.key() == UNKEYABLE
        with pytest.raises(ValueError, match="another remote session"):
            session.submit(OP, ARRAY, session.new_id(), "add", None, (foreign, 1), {})
    finally:
        other.close()


# ------------------------------------------------------------------ calls of several results
ARRAYS = api.ARRAYS




class _Held:
    """A stand-in for an array the session made under *hid* (its ``_handle_of`` reads
    ``_h`` of an ``ndarray``)."""

    def __init__(self, hid: int) -> None:
        self._h = hid


def _modf_then_mul(cp, session):
    """A key of ``f, w = modf(x); y = w * 2``: the key, its handle lookup, ``x``, the
    pieces' handles and ``y``'s."""
    handle_of = lambda value: value._h if isinstance(value, _Held) else session._handle_of(value)   # noqa: E731
    x = cp.linspace(0.5, 4.0, 8)
    key = StretchKey(handle_of)
    pieces = [session.new_id(), session.new_id()]
    key.add_op(FN, ARRAYS, pieces, "modf", None, (x,), {})
    y = session.new_id()
    key.add_op(OP, ARRAY, y, "mul", None, (_Held(pieces[1]), 2), {})
    return key, handle_of, x, pieces, y


def test_a_call_of_several_results_is_keyed_with_its_count_and_its_pieces_by_place(cp, session):
    """Its record holds its count (``(want, n)``); each piece is named by the op and its
    place, ``("r", k, p)``; the results' handles are flat, by result slot (a replay's
    ``T`` lists them so); a free of a piece names it so too."""
    key, _handle_of, _x, pieces, y = _modf_then_mul(cp, session)
    key.add_op(OP, ARRAY, session.new_id(), "add", None, (_Held(y), _Held(pieces[0])), {})
    key.add_free(pieces[0])
    assert key.key() != UNKEYABLE and key.several
    assert key.records[0][1] == (ARRAYS, 2)
    assert key.records[1][3] == (("r", 0, 1), ("s", "int"))
    assert key.records[2][3] == (("r", 1), ("r", 0, 0))
    assert key.records[3] == ("free", ("r", 0, 0))
    assert key.outs[:2] == pieces and len(key.outs) == 4


def test_the_count_of_a_call_of_several_results_is_in_the_key(cp, session):
    """``nonzero`` of a 1-d and of a 2-d array: one piece against two, another stretch
    (the count follows from metadata the key does not hold)."""
    one, two = cp.ones(4), cp.ones((2, 2))

    def nonzero(x, count):
        key = StretchKey(session._handle_of)
        key.add_op(FN, ARRAYS, [session.new_id() for _ in range(count)], "nonzero", None, (x,), {})
        return key

    assert nonzero(one, 1).key() != nonzero(two, 2).key()
    assert nonzero(one, 1).key() == nonzero(cp.ones(5), 1).key()


def test_with_the_switch_off_a_call_of_several_results_makes_the_stretch_unkeyable(cp, session):
    key = StretchKey(session._handle_of, several_ok=False)
    key.add_op(FN, ARRAYS, [session.new_id(), session.new_id()], "modf", None, (cp.ones(3),), {})
    assert key.key() == UNKEYABLE and not key.several


def test_a_fall_back_resumes_a_call_of_several_results_to_the_same_key(cp, session):
    """StretchKey.resume, handed the template's records and each op's result (a list for
    the call), builds the key add_op builds."""
    built, handle_of, x, pieces, y = _modf_then_mul(cp, session)
    ops = [r for r in built.records if r[0] != "free"]
    resumed = StretchKey(handle_of)
    resumed.resume(ops, [x._h], list(built.params), [pieces, y], [(2, pieces[0])])
    built.add_free(pieces[0])
    assert resumed.key() == built.key()
    assert resumed.outs == built.outs and resumed.several
