"""A slice whose bounds move each step (``xb = x_all[j:j + batch]``, minibatch SGD over the
data in order) is one stretch: a basic index's ints are stretch parameters
(protocol/stretches.basic_index). Before, each step's bounds made a new stretch key and such
a loop was never held. The worker bakes the view into its capture and, once the bounds
move, runs that ``getitem`` eagerly into a buffer of the graph's own, reading the whole data
where it is (worker/moving_views.py). The loops run on the NumPy pool against the same
session with no replay (bitwise) and against the reference module (local CuPy on a GPU)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretches import basic_index
from kernelproxy.index_shape import basic_index_shape
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.stretch_key import StretchKey

from ..differential import reference_module

OP, ARRAY = m.KIND_OPERATOR, api.ARRAY
STEPS = 48


# ------------------------------------------------------------------ the rule


def test_a_basic_index_holds_parameters_and_any_other_index_stays_literal():
    assert basic_index(slice(3, 7)) and basic_index(4) and basic_index(np.int64(2))
    assert basic_index((slice(None), slice(2, None))) and basic_index((Ellipsis, 1, None))
    assert not basic_index(slice(None)) and not basic_index((Ellipsis, None))   # (no int)
    assert not basic_index(True) and not basic_index(np.bool_(True))   # (a mask)
    assert not basic_index([1, 2]) and not basic_index((np.array([1]), 2))
    assert not basic_index(slice(1.0, 2)) and not basic_index(1 << 70)


def test_a_moving_slice_keys_as_one_stretch_its_step_and_nones_in_the_key(cp, session):
    x = cp.ones((64, 4))

    def key(index):
        k = StretchKey(session._handle_of)
        k.add_op(OP, ARRAY, session.new_id(), "getitem", None, (x, index), {})
        return k

    a, b = key(slice(0, 8)), key(slice(8, 16))
    assert a.key() == b.key() and b.params == [8, 16]
    assert key((slice(None), slice(1, 3))).params == [1, 3]
    assert key((2, slice(None, 5))).params == [2, 5]
    assert key(slice(0, 8, 2)).key() != key(slice(0, 8, 1)).key()
    assert key(slice(0, 8)).key() != key(slice(None, 8)).key()
    assert key([0, 1]).params == []


def test_an_assignments_basic_index_holds_parameters_too(cp, session):
    """``losses[i] = loss``, ``traj[i, :3] = x``: an assignment's basic index has its ints as
    parameters, as a ``getitem``'s (forty-eighth session: it was a literal, so a loop that
    records each step into a device array made a stretch per step and never replayed)."""
    x, v = cp.ones((64, 4)), cp.zeros(4)

    def key(index, value=v):
        k = StretchKey(session._handle_of)
        k.add_op(OP, api.NONE, None, "setitem", None, (x, index, value), {})
        return k

    a, b = key(3), key(7)
    assert a.key() == b.key() and a.params == [3] and b.params == [7]
    assert key((5, slice(0, 3))).params == [5, 0, 3]
    assert key(slice(0, 8, 2)).key() != key(slice(0, 8, 1)).key()
    assert key(3, 0.5).key() != key(3, 0.25).key()   # (the value stays literal)
    assert key([0, 1]).params == [] and key(True).params == []


@pytest.mark.parametrize("index", [3, -1, slice(2, 5), slice(-3, None), slice(5, 1),
                                   (slice(None), 2), (None, Ellipsis, slice(1, 3)),
                                   (1, None, slice(None, None, 2)), (Ellipsis, None)])
def test_the_shape_a_basic_index_gives_is_numpys(index):
    a = np.zeros((6, 5, 4))
    assert basic_index_shape(a.shape, index) == a[index].shape


@pytest.mark.parametrize("index", [6, -7, (1, 2, 3, 4), (Ellipsis, Ellipsis), slice(0, 2, 0)])
def test_an_index_numpy_refuses_gives_no_shape(index):
    assert basic_index_shape((6, 5, 4), index) is None


# ------------------------------------------------------------------ loops


def sgd_in_order(xp):
    """Linear regression by SGD over the data in order: the minibatch a slice at an offset
    that moves, kept into the next step (an input that shares the data's memory), the
    weights written in place."""
    rng = np.random.default_rng(3)
    data = xp.asarray(rng.normal(0, 1, (1000, 8)).astype(np.float32))
    target = xp.asarray(rng.normal(0, 1, 1000).astype(np.float32))
    w = xp.zeros(8, dtype=xp.float32)
    out = []
    for step in range(STEPS):
        j = (step * 64) % (1000 - 64)
        xb, yb = data[j:j + 64], target[j:j + 64]
        err = xb @ w - yb
        out.append(float((err * err).mean()))
        w -= 0.05 * (xb.T @ err) / 64
    return out + [_host(xp, w)]


def rows_and_windows(xp):
    """An int index (``data[i]``) and windows that overlap from one step to the next."""
    data = xp.arange(4000, dtype=xp.float64).reshape(400, 10)
    out = []
    for i in range(STEPS):
        row = data[i]
        window = data[(3 * i) % 380:(3 * i) % 380 + 20]
        out.append(float((row * 2).sum() + window.mean()))
    return out


def epochs_with_a_short_last_batch(xp):
    """Batches of 96 over 1000 elements: each epoch's last is 40 long, another shape (the
    template's metadata does not hold: that step goes as ops)."""
    data = xp.arange(1000, dtype=xp.float32)
    out = []
    for _epoch in range(4):
        for j in range(0, 1000, 96):
            batch = data[j:j + 96]
            out.append(float((batch * 0.5).sum()))
            out.append(batch.shape[0])
    return out


def written_through_the_view(xp):
    """A write into the moving view (``xb *= 1.01``) is the data's: never a copy's."""
    data = xp.arange(2000, dtype=xp.float64).reshape(200, 10)
    out = []
    for i in range(STEPS):
        xb = data[i:i + 8]
        xb *= 1.01
        out.append(float(xb.sum()))
    return out + [float(data.sum())]


def data_written_after_its_view(xp):
    """The array a moving view slices written after the view is made (``data += 1``, a
    stencil's update after a probe window): the view sees it, as a view does; a copy made
    when the view was would not (such a stretch re-runs its records once its bounds move)."""
    data = xp.arange(400, dtype=xp.float64)
    u = xp.linspace(0.0, 1.0, 64)
    out = []
    for i in range(STEPS):
        xb = data[i:i + 4]
        data += 1.0
        probe = u[i % 50:i % 50 + 5]
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        out.append(float(xb.sum()) + float(probe.mean()))
    return out


def a_selection_then_its_slice(xp):
    """A mask's selection (its shape its values') sliced and scaled: the results' shapes
    are not the template's (a held stretch asks the worker for them)."""
    data = xp.arange(64, dtype=xp.float64)
    out = []
    for i in range(STEPS):
        y = data[data < (i % 8)]
        z, w = y[0:4], y * 2
        out += [z.shape[0], w.shape[0], float(z.sum()) + float(w.sum())]
    return out


def columns(xp):
    """A moving view that is not contiguous (``x[:, j:j + 4]``): its buffer has its strides."""
    data = xp.arange(600, dtype=xp.float64).reshape(10, 60)
    out = []
    for i in range(STEPS):
        j = i % 56
        out.append(float((data[:, j:j + 4] * 3).sum(axis=0)[1]))
    return out


def patches_and_a_reversed_window(xp):
    """A 2-D patch that moves over an image (strided: its buffer has the view's strides) and
    a window read backwards (a negative step: no buffer stands for it, its records re-run)."""
    img = xp.arange(900, dtype=xp.float32).reshape(30, 30)
    line = xp.arange(200, dtype=xp.float64)
    out = []
    for i in range(STEPS):
        r, c = (i * 5) % 26, (i * 3) % 26
        patch = img[r:r + 4, c:c + 4]
        out.append(float((patch - patch.mean()).max()) + float(line[i + 8:i:-1].cumsum()[-1]))
    return out


def kept_view_written_after(xp):
    """The minibatch kept past the loop is a view of the data: writing it after the loop
    writes the data, as CuPy's would."""
    data = xp.arange(800, dtype=xp.float32).reshape(100, 8)
    out = []
    for i in range(STEPS):
        xb = data[i:i + 4]
        out.append(float(xb.sum()))
    xb[0] = -1.0
    return out + [float(data.sum()), _host(xp, data[STEPS - 1])]


def _host(xp, a):
    return a.tolist() if xp is np else a.get().tolist()


def _run(pool, program, settings, device=False):
    with Session(pool.address, pool.token, settings=settings) as s:
        got = program(module_for(s))
        info = s.memory_info()
    return (got, info["stretches"], info["device"]["kind"]) if device else (got, info["stretches"])


def _bits(values: list) -> list:
    return [[_bits(v)] if isinstance(v, list) else
            (struct.pack("<d", v) if isinstance(v, float) else v) for v in values]


def records_each_step(xp):
    """A loop that records each step's loss and state into device arrays by index (``losses[i]
    = ...``, ``traj[i] = x``, ``traj[i, :2] = -1``), read every step and after the loop."""
    x = xp.linspace(0, 1, 32)
    losses = xp.zeros(STEPS)
    traj = xp.zeros((STEPS, 32))
    out = []
    for i in range(STEPS):
        x = x * 0.99 + 0.01
        losses[i] = (x * x).sum()
        traj[i] = x
        traj[i, :2] = -1.0
        out.append(float(x[1]))
    return out + [_host(xp, losses), _host(xp, traj[::7])]


def ring_of_rows(xp):
    """The last eight states in a ring (``buf[i % 8] = x``), the ring read: an index that
    takes turns gets a graph for each value (worker/graph_state.py, VARIANTS), where a
    graph given another index than it baked would run the assignment eagerly."""
    x, buf = xp.linspace(0, 1, 16), xp.zeros((8, 16))
    out = []
    for i in range(2 * STEPS):   # (WATCHED replays with the assignment eager first)
        x = x * 0.9 + 0.1 * xp.cos(x)
        buf[i % 8] = x
        out.append(float(buf.mean()))
    return out + [_host(xp, buf)]


def slot_added_to(xp):
    """An entry that reads what it writes, at an index that takes turns (``acc[i % 4] +=
    x.sum()``: a moving view written, which graphs never served before they kept one for
    each index)."""
    x, acc = xp.linspace(0.1, 1, 20), xp.zeros(4)
    out = []
    for i in range(STEPS):
        x = xp.abs(x - 0.3)
        acc[i % 4] += x.sum()
        out.append(float(x.max()))
    return out + [_host(xp, acc)]


def ring_longer_than_the_graphs_kept(xp):
    """A ring of twelve slots: more values than graphs kept (VARIANTS + 1), so the
    assignment is made eager after the first turn, as for an index that moves on."""
    x, buf = xp.linspace(0, 1, 16), xp.zeros((12, 16))
    out = []
    for i in range(STEPS):
        x = xp.sqrt(x + 0.5)
        buf[i % 12] = x
        out.append(float(buf[:, 3].sum()))
    return out + [_host(xp, buf)]


#: the loops graphs serve, and the replays each makes at least (its short batches and its
#: first sightings apart; a ring's first turn re-run, the second capturing a graph a slot)
SERVED = {sgd_in_order: STEPS - 12, rows_and_windows: STEPS - 12, columns: STEPS - 12,
          epochs_with_a_short_last_batch: 20, kept_view_written_after: STEPS - 12,
          records_each_step: STEPS - 12, ring_of_rows: 2 * STEPS - 40, slot_added_to: STEPS - 24,
          ring_longer_than_the_graphs_kept: STEPS - 30}


@pytest.mark.parametrize("program", [sgd_in_order, rows_and_windows, epochs_with_a_short_last_batch,
                                     written_through_the_view, columns, kept_view_written_after,
                                     patches_and_a_reversed_window, data_written_after_its_view,
                                     a_selection_then_its_slice, records_each_step, ring_of_rows,
                                     slot_added_to, ring_longer_than_the_graphs_kept])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_loop_over_moving_slices_is_replayed_with_the_numbers_of_no_replay(pool, program, compiled):
    got, figures = _run(pool, program, SessionSettings(replay_measured=False, compiled=compiled))
    want, _ = _run(pool, program, SessionSettings(graphs=False))
    assert _bits(got) == _bits(want)
    assert _bits(got) == _bits(program(reference_module()))
    if program in SERVED:   # (every step its own key before: no replay at all)
        assert figures["graphed"] >= SERVED[program], figures
    if program is slot_added_to:   # (never served before: a moving view written. Now a
        # graph for each slot once the first replays said the index takes turns, the
        # closing read the only op between graphs)
        assert figures["between_graphs"] <= figures["graphed"] + 4, figures


def three_indexes_taking_turns(xp):
    """Three rings whose indexes first change at different steps (a review's loop): each
    first change made its assignment eager and captured again, so the verdict that the
    first takes turns came with the stretch's captures spent, and its capture was refused:
    the stretch given up, where the tree before served it with the assignments eager."""
    x = xp.linspace(0, 1, 16)
    a, b, c = xp.zeros((3, 16)), xp.zeros((2, 16)), xp.zeros((2, 16))
    out = []
    for i in range(120):
        x = x * 0.9 + 0.1
        a[i % 3] = x
        b[(i // 6) % 2] = x * 2
        c[(i // 10) % 2] = x * 3
        out.append(float(x[0]))
    return out + [_host(xp, a), _host(xp, b), _host(xp, c)]


def test_indexes_found_to_take_turns_late_keep_their_stretch_served(pool):
    got, figures = _run(pool, three_indexes_taking_turns, SessionSettings(replay_measured=False))
    want, _ = _run(pool, three_indexes_taking_turns, SessionSettings(graphs=False))
    assert _bits(got) == _bits(want)
    assert not figures["never_graphed"] and figures["graphed"] >= figures["replays"] - 12, figures


def test_a_dataset_whose_batches_take_turns_is_still_read_where_it_is(pool):
    """Minibatches cycling through four batches of a dataset (``data[j:j + 16]``, ``j`` taking
    turns): their view stays eager and the dataset is read where it is, as for bounds that
    move on. Baked into a graph per batch (graphs by the ints they baked), the whole dataset
    would be an input copied into each graph's buffer at every replay (a review's find)."""
    def loop(xp):
        data = xp.ones((1 << 15, 8), dtype=xp.float32)
        return [float((data[j:j + 16] * 2).sum()) for j in ((s % 4) * 16 for s in range(STEPS))]

    got, figures, kind = _run(pool, loop, SessionSettings(replay_measured=False), device=True)
    assert got == [256.0] * STEPS
    # (one capture with the view baked, one with it eager: no graph for each batch)
    assert figures["graphed"] >= STEPS - 12 and figures["captures"] <= 3, figures
    if kind == "cupy":   # (and no buffer of the dataset's: the NumPy device's graphs keep none)
        assert figures["graph_bytes"] < (1 << 15) * 8 * 4 // 4, figures


def test_the_data_a_moving_view_slices_is_read_where_it_is_not_copied_each_replay(pool):
    """The graphs hold a buffer for the minibatch, not a copy of the whole data (4 MB; on a
    GPU: the NumPy device's graphs hold no memory of their own, and which inputs they copy
    is worker/moving_views.py's ``sliced_only``, tested in tests/gpu_backend); the batch is
    copied into it by the first graph, no op of its own between graphs."""
    def loop(xp):
        data = xp.ones((1 << 17, 8), dtype=xp.float32)
        out = []
        for step in range(STEPS):
            xb = data[step * 16:step * 16 + 16]
            out.append(float((xb * 2).sum()))
        return out

    got, figures, kind = _run(pool, loop, SessionSettings(replay_measured=False), device=True)
    assert got == [256.0] * STEPS
    assert figures["graphed"] >= STEPS - 12, figures
    # (the batch gathered by the first graph's copy table like an input: the read is the only
    # op run between graphs, where the view had been one too)
    assert figures["between_graphs"] <= figures["graphed"] + 2, figures
    if kind == "cupy":   # (the NumPy device's graphs keep no memory apart: graph_bytes 0)
        assert 0 < figures["graph_bytes"] < (1 << 17) * 8 * 4 // 4, figures
