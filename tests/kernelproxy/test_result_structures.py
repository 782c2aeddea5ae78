"""Functions of several results whose structure the arguments tell (kernelproxy/
result_structures.py): the client names the arrays itself and goes on, no round trip, and
the results are those CuPy gives, in CuPy's container; calls it cannot tell wait as before;
a wrong prediction is the op's error on the worker, nothing stored, the session serving on.
The worker's side runs in this process (an Executor on the NumPy device), the rest through
a real pool and worker."""

from __future__ import annotations

import gc

import msgpack
import numpy as np
import pytest

from gpu_backend.devices import open_device
from gpu_backend.protocol import api, codec
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import InvalidHandleError
from gpu_backend.worker import Executor, HandleTable
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection


@pytest.fixture
def quiet(pool):
    """A session that sends its ops only at a sync point (no early batches), so that a
    call's round trip, if it made one, shows as a batch sent."""
    with Session(pool.address, pool.token, settings=SessionSettings(eager_flush=False)) as s:
        yield s


def _not_waited(session) -> bool:
    """Whether the session's last call left its op queued or its batch unanswered: a call
    that waits for its structure reads every reply before it returns, its queue left with
    free records at most (its temporaries dropped). (A call may end the stretch before it
    and go in a batch of its own, sent without a wait.)"""
    return bool(session._in_flight) or any(record[:1] == b"\x95" for record in session._ops)


def _x(xp):
    return xp.linspace(0.1, 20.0, 12)


#: (label, the call, its count of arrays): each told from its arguments
CALLS = [
    ("divmod", lambda xp, x: xp.divmod(x, 3.5), 2),
    ("operator divmod", lambda xp, x: divmod(x, 3.5), 2),
    ("reflected divmod", lambda xp, x: divmod(7.0, x), 2),
    ("modf", lambda xp, x: xp.modf(x / 3), 2),
    ("frexp", lambda xp, x: xp.frexp(x), 2),
    ("split", lambda xp, x: xp.split(x, 3), 3),
    ("split at indices", lambda xp, x: xp.split(x, [2, 7]), 3),
    ("array_split", lambda xp, x: xp.array_split(x, 5), 5),
    ("array_split on an axis", lambda xp, x: xp.array_split(x.reshape(3, 4), 3, axis=1), 3),
    ("hsplit", lambda xp, x: xp.hsplit(x.reshape(3, 4), 2), 2),
    ("vsplit", lambda xp, x: xp.vsplit(x.reshape(3, 4), [1]), 2),
    ("dsplit", lambda xp, x: xp.dsplit(x.reshape(1, 3, 4), 4), 4),
    ("meshgrid", lambda xp, x: xp.meshgrid(x[:3], x[:5]), 2),
    ("meshgrid ij sparse", lambda xp, x: xp.meshgrid(x[:3], x[:5], x[:2], indexing="ij", sparse=True), 3),
    ("broadcast_arrays", lambda xp, x: xp.broadcast_arrays(x.reshape(3, 4), x[:4]), 2),
    ("atleast_2d of two", lambda xp, x: xp.atleast_2d(x, x[0]), 2),
    ("atleast_3d of three", lambda xp, x: xp.atleast_3d(x, x[:2], x.reshape(3, 4)), 3),
    ("unique with counts", lambda xp, x: xp.unique(xp.floor(x / 4), return_counts=True), 2),
    ("unique with all", lambda xp, x: xp.unique(xp.floor(x / 4), return_index=True, return_inverse=True,
                                                return_counts=True), 4),
    ("histogram", lambda xp, x: xp.histogram(x, bins=4), 2),
    ("tril_indices", lambda xp, x: xp.tril_indices(4, 1), 2),
    ("triu_indices", lambda xp, x: xp.triu_indices(3, m=5), 2),
    ("where of one", lambda xp, x: xp.where(x), 1),
    ("gradient on two axes", lambda xp, x: xp.gradient(x.reshape(3, 4), axis=(1, 0)), 2),
    ("diag_indices", lambda xp, x: xp.diag_indices(3, 3), 3),
    ("unravel_index", lambda xp, x: xp.unravel_index(xp.arange(6), (2, 3)), 2),
    ("linalg.qr", lambda xp, x: xp.linalg.qr(x.reshape(4, 3)), 2),
    ("linalg.qr raw", lambda xp, x: xp.linalg.qr(x.reshape(4, 3), mode="raw"), 2),
    ("linalg.svd", lambda xp, x: xp.linalg.svd(x.reshape(3, 4), full_matrices=False), 3),
    ("linalg.eigh", lambda xp, x: xp.linalg.eigh(x.reshape(3, 4) @ x.reshape(3, 4).T), 2),
    ("linalg.slogdet", lambda xp, x: xp.linalg.slogdet(x[:9].reshape(3, 3) + 3 * xp.eye(3)), 2),
]

#: calls that are one array: issued as any array op
ONE_ARRAY = [
    ("where of three", lambda xp, x: xp.where(x > 5, x, -x)),
    ("unique", lambda xp, x: xp.unique(xp.floor(x / 4))),
    ("indices", lambda xp, x: xp.indices((2, 3))),
    ("atleast_2d of one", lambda xp, x: xp.atleast_2d(x)),
    ("gradient on one axis", lambda xp, x: xp.gradient(x.reshape(3, 4), axis=1)),
    ("gradient of 1-d", lambda xp, x: xp.gradient(x)),
    ("linalg.qr r", lambda xp, x: xp.linalg.qr(x.reshape(4, 3), mode="r")),
    ("linalg.svd values", lambda xp, x: xp.linalg.svd(x.reshape(3, 4), compute_uv=False)),
]


def _equal(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    assert np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)), (a, b)


@pytest.mark.parametrize("label, call, count", CALLS, ids=[c[0] for c in CALLS])
def test_a_call_of_known_structure_makes_no_round_trip(quiet, ref, label, call, count):
    """The session's first call of the name waits (its container learnt from the pool,
    its count checked); from the second on, none does. The container is the pool's device's
    (local CuPy's on a GPU, NumPy's on the NumPy device)."""
    cp = module_for(quiet)
    x = _x(cp)
    float(x.sum())   # (its metadata here: the calls that need it)
    first = call(cp, x)
    assert not _not_waited(quiet), "the first call of a name is waited for"
    result = call(cp, x)
    assert _not_waited(quiet), "the call waited for the pool"
    expected = call(ref, _x(ref))
    assert type(result) is type(first) is (list if isinstance(expected, list) else tuple)
    assert len(result) == len(expected) == count
    for got, want in zip(result, expected):
        _equal(got.get(), ref.asnumpy(want) if hasattr(ref, "asnumpy") else want)


@pytest.mark.parametrize("label, call", ONE_ARRAY, ids=[c[0] for c in ONE_ARRAY])
def test_a_call_of_one_array_is_an_array_op(quiet, ref, label, call):
    cp = module_for(quiet)
    x = _x(cp)
    float(x.sum())
    result = call(cp, x)
    assert _not_waited(quiet)
    assert isinstance(result, cp.ndarray)
    want = call(ref, _x(ref))
    _equal(result.get(), ref.asnumpy(want) if hasattr(ref, "asnumpy") else want)


def test_calls_whose_structure_needs_metadata_not_here_wait_as_before(quiet):
    """``x.nonzero()`` of an array whose ndim the client does not know yet (made by an op
    whose reply has not come) waits for the pool's answer, also once the name's container
    is learnt; the results are the same."""
    cp = module_for(quiet)
    x = _x(cp)
    float(x.sum())
    x.nonzero()                      # (the name's first call: its container learnt)
    y = x > 5                        # (its metadata not here yet)
    batches = quiet._batch
    nz = y.nonzero()
    assert quiet._batch > batches   # (the waiting path: sent, its reply read)
    assert not _not_waited(quiet)
    assert type(nz) is tuple and len(nz) == 1
    _equal(nz[0].get(), np.nonzero(np.linspace(0.1, 20.0, 12) > 5)[0])
    nz2 = y.nonzero()                # (now known: no wait)
    assert _not_waited(quiet)
    _equal(nz2[0].get(), nz[0].get())


def test_an_equal_split_that_does_not_divide_raises_at_the_call_where_the_length_is_known(session):
    cp = module_for(session)
    x = _x(cp)
    float(x.sum())
    with pytest.raises(ValueError, match="equal division|must divide"):
        cp.split(x, 5)
    grid = x.reshape(3, 4)
    float(grid.sum())
    with pytest.raises(ValueError, match="equal division|must divide"):
        cp.hsplit(grid, 3)
    assert float(x.sum()) == pytest.approx(float(np.linspace(0.1, 20.0, 12).sum()))


def test_an_error_of_a_predicted_call_is_raised_at_the_next_sync_and_its_arrays_never_computed(session):
    """As for an array op (``a + b`` of shapes that do not broadcast): the error at the
    next sync point, naming the call and its line; its pieces say they were never made;
    the session goes on."""
    cp = module_for(session)
    cp.split(_x(cp), 2)                 # (the session's first split: its container learnt)
    with no_collection():
        z = _x(cp) * 2                  # (its length not known here: told)
        pieces = cp.split(z, 5)
        after = z + 1
        assert len(pieces) == 5
        with pytest.raises(ValueError, match="equal division|must divide") as caught:
            float(z.sum())
        assert any("cupy.split" in note for note in caught.value.__notes__)
        with pytest.raises(InvalidHandleError):
            after.get()
        with pytest.raises(InvalidHandleError):
            pieces[0].get()
    again = _x(cp)
    a, b = cp.divmod(again, 2.0)
    _equal(a.get(), np.floor_divide(np.linspace(0.1, 20.0, 12), 2.0))


def test_pieces_are_views_written_through_as_in_cupy(same):
    """``a, b = split(y, 2)`` are views of y: a write into a piece shows in y."""
    def body(xp):
        y = xp.arange(8.0) * 2
        a, b = xp.split(y, 2)
        b += 1
        parts = xp.array_split(y, 3)
        parts[2][:] = -1
        g, h = xp.meshgrid(y[:3], y[:2], copy=False, sparse=True)
        return y, a, b, parts[0], parts[2], g, h

    same(body)


def test_a_loop_of_calls_of_several_results_gives_cupys_results(same):
    """The unseen loop ``tuple_results``' shape: divmod, frexp, modf and nonzero's tuple
    used to index in place, each step, a read at its end."""
    def body(xp):
        x = xp.linspace(0.1, 20, 90)
        out = []
        for _ in range(12):
            q, r = xp.divmod(x, 3.5)
            fr, ex = xp.frexp(x)
            fpart, ipart = xp.modf(x / 3)
            x = q + r * 0.9 + fr + ex * 0.01 + fpart + ipart * 0.1
            nz = xp.nonzero(x > 8)
            x[nz] -= 1
            out.append(float(x.sum()))
            out.append(int(nz[0].size))
        return np.array(out), x

    same(body)


def test_dropped_results_are_freed_on_the_worker(pool):
    """A loop's pieces, dropped each step, are freed: the worker holds as many arrays after
    a hundred steps as after one. (Replay off: a replay run ahead keeps its results under
    the worker's own ids until the client names them, a count that follows the timing.)"""
    s = Session(pool.address, pool.token, settings=SessionSettings(graphs=False))
    try:
        cp = module_for(s)
        x = _x(cp)

        def step():
            pieces = cp.array_split(x, 4)
            q, r = cp.divmod(pieces[0], 2.0)
            return float((q + r).sum())

        step()
        gc.collect()
        held = s.memory_info()["arrays"]
        for _ in range(100):
            step()
        gc.collect()
        s.sync()
        assert s.memory_info()["arrays"] == held
    finally:
        s.close()


# ------------------------------------------------------------------ the worker's side
def _executor():
    device = open_device("cpu")
    table = HandleTable(device)
    return Executor(device, table), table


def _run(executor, records: list):
    pack = codec.make_packer().pack
    header = codec.packb({"k": b"", "b": 1, "n": len(records), "r": None})
    parts = [header]
    for seq, want, out, name, args in records:
        parts += [pack([seq, m.KIND_FUNCTION, want, out, name]), pack([None, args, {}])]
    head, ops = executor.open_batch(b"".join(parts))
    reply, _ = executor.run_batch(head, ops, [])
    executor.after_reply()
    return reply


def test_the_worker_stores_each_array_under_its_handle_with_its_metadata():
    executor, table = _executor()
    reply = _run(executor, [(1, api.ARRAY, 1, "arange", [6.0]),
                            (2, api.ARRAYS, [2, 3], "divmod", [codec.Handle(1), 4.0])])
    assert reply["e"] is None, reply["e"]
    np.testing.assert_array_equal(table.arrays[2], np.arange(6.0) // 4)
    np.testing.assert_array_equal(table.arrays[3], np.arange(6.0) % 4)
    metas = {entry[0] for entry in msgpack.unpackb(reply["m"])}
    assert {2, 3} <= metas


@pytest.mark.parametrize("out, error", [
    ([2, 3, 4], "TypeError"),        # a count the call does not give
    ([2], "TypeError"),
    (2, "ProtocolError"),            # not a list
    ([2, 2], "ProtocolError"),       # a handle twice
    ([2, -3], "ProtocolError"),      # the worker's own numbering
    ([2, "x"], "ProtocolError"),
    ([], "ProtocolError"),
], ids=repr)
def test_a_wrong_prediction_is_the_ops_error_and_stores_nothing(out, error):
    executor, table = _executor()
    reply = _run(executor, [(1, api.ARRAY, 1, "arange", [6.0]),
                            (2, api.ARRAYS, out, "divmod", [codec.Handle(1), 4.0])])
    assert reply["e"] is not None and reply["e"][0] == 2 and reply["e"][1] == error, reply["e"]
    assert set(table.arrays) == {1}


def test_a_result_that_is_not_arrays_is_refused():
    """``ARRAYS`` asked of a call whose result is one array: refused, nothing stored."""
    executor, table = _executor()
    reply = _run(executor, [(1, api.ARRAY, 1, "arange", [6.0]),
                            (2, api.ARRAYS, [2, 3], "exp", [codec.Handle(1)])])
    assert reply["e"] is not None and reply["e"][1] == "TypeError", reply["e"]
    assert set(table.arrays) == {1}


def test_a_loop_of_one_array_calls_is_held_and_gives_cupys_results(pool, ref):
    """``where(c, x, y)`` and ``unique(x)`` are array ops: a loop of them and a read is held
    and replayed (before, each call waited for its structure), with CuPy's results. On a GPU
    ``unique``'s own sync keeps its stretch out of a graph: it is re-run from its records."""
    def body(xp):
        x = xp.linspace(0, 1, 50)
        out = []
        for _ in range(30):
            y = xp.where(x > 0.5, x * 0.3, x + 0.2)
            u = xp.unique(xp.floor(y * 10))
            out.append(float(u.sum()))
            x = (y * 1.7) % 1.0
        return np.array(out), x

    want = body(ref)
    # (kept held whatever its replays' timing: judged on a loaded machine, a stretch may be
    # let go; how many of the 30 steps are replayed depends on when its hold is answered)
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        got = body(module_for(s))
        figures = s.memory_info()["stretches"]
        _equal(got[0], want[0])
        _equal(got[1].get(), ref.asnumpy(want[1]) if hasattr(ref, "asnumpy") else want[1])
    assert figures["replays"] >= 1, figures


# ------------------------------------------------------------------ held, their pieces predicted
def _static_name(label: str) -> str | None:
    """The STATIC_SEVERAL name a CALLS entry calls, or None."""
    from kernelproxy.template_predictions import STATIC_SEVERAL
    name = label.split()[0]
    return name if name in STATIC_SEVERAL or label == "operator divmod" else None


STATIC_CALLS = [c for c in CALLS if _static_name(c[0]) is not None]
#: the STATIC_SEVERAL names CALLS has no call of
EXTRA_STATIC = [
    ("atleast_1d", lambda xp, x: xp.atleast_1d(x, x[0]), 2),
    ("tril_indices_from", lambda xp, x: xp.tril_indices_from(x.reshape(3, 4), 1), 2),
    ("triu_indices_from", lambda xp, x: xp.triu_indices_from(x.reshape(4, 3)), 2),
]


def test_every_static_several_name_has_a_call_here():
    """Each name whose pieces the template predicts is checked below against the worker."""
    from kernelproxy.template_predictions import STATIC_SEVERAL
    checked = {_static_name(label) for label, _call, _count in STATIC_CALLS}
    missing = STATIC_SEVERAL - checked - {name for name, _call, _count in EXTRA_STATIC}
    assert not missing, missing


def test_histogram_is_predicted_but_for_bins_named_by_a_rule():
    """``histogram``'s pieces are (bins,) and (bins + 1,) for a count of bins or an array of
    edges given, or the default; ``bins="auto"`` (a rule, NumPy's) counts the values, so a
    run answered from the template asks the worker for them (template_predictions)."""
    from gpu_backend.protocol import api
    from kernelproxy.template_predictions import static_result

    def record(args, kwargs=()):
        return ("f", (api.ARRAYS, 2), ("l", "str", "histogram"), None, args, kwargs)

    def known(role):
        return ((8,), np.dtype("float64"))

    x = ("i", 0)
    assert static_result(record((x,)), known)                           # (bins=10)
    assert static_result(record((x, ("l", "int", 4))), known)
    assert static_result(record((x,), (("bins", ("l", "int", 4)),)), known)
    assert static_result(record((x, ("i", 1))), known)                  # (an array of edges)
    assert not static_result(record((x, ("l", "str", "auto"))), known)
    assert not static_result(record((x,), (("bins", ("l", "str", "fd")),)), known)
    # (a 0-d array of bins: NumPy reads its value as the count)
    assert not static_result(record((x, ("i", 1))), lambda role: ((), np.dtype("int64"))
                             if role == ("i", 1) else known(role))


def _pieces_meta(pieces) -> list:
    return [piece._m for piece in pieces]


@pytest.mark.parametrize("label, call, count", STATIC_CALLS + EXTRA_STATIC,
                         ids=[c[0] for c in STATIC_CALLS + EXTRA_STATIC])
def test_the_pieces_a_held_template_predicts_have_the_workers_metadata(pool, label, call, count):
    """A loop of the call, held: in a run answered from its template, the pieces are
    handed out with their metadata at once (STATIC_SEVERAL), and it is what a session
    without replay is told by its worker for the same call (shape, dtype, strides,
    flags)."""
    settings = SessionSettings(replay_measured=False)
    with Session(pool.address, pool.token, settings=settings) as s, \
            Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
        cp = module_for(s)
        x = _x(cp)
        float(x.sum())
        predicted = None
        for _ in range(16):
            pieces = call(cp, x)
            predicted = _pieces_meta(pieces)
            float(sum(float(p.sum()) for p in pieces))
        assert s.stretches.figures()["fast"] > 0, label
        assert all(meta is not None for meta in predicted), (label, predicted)
        theirs = module_for(plain)
        y = _x(theirs)
        float(y.sum())
        told = [p._meta() for p in call(theirs, y)]
        assert predicted == told, (label, predicted, told)
