"""Stretch replay end to end (docs/stretch-replay.md): loops run with it on are bitwise equal
to the same loops with it off (``GPUWB_GRAPHS=0``) and, on the NumPy device, to NumPy;
stretches are held, replayed through graphs (the NumPy device's recorded calls; CUDA
graphs on a GPU: ``GPUWB_TEST_DEVICES=auto GPUWB_REFERENCE=cupy``), split around eager ops, and fall back to a
re-run when a guard fails; errors name the op and line they would without replay.

Each test runs its loop on two sessions of the suite's pool: ``on`` (the default) and
``off``.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpu_backend.pool import LocalPool
from gpu_backend.protocol.stretches import REPEATS
from gpu_backend.protocol import codec
from gpu_backend.worker.stretches import HeldStretch, read_records
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.stretch_replay import STALE_AFTER, TIMED_REPLAYS

from ..differential import TEST_DEVICES, assert_bitwise as _bitwise, reference_module
from ..quiet_gc import no_collection

STEPS = 14
#: Replays a loop of STEPS runs at least: from the sighting after the offer on (one fewer
#: where a collection adds a free record to one stretch)
REPLAYED = STEPS - REPEATS - 1


@pytest.fixture(scope="module")
def sessions(pool):
    # (replays counted: every repeated stretch stays held, none timed and let go)
    on = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
    off = Session(pool.address, pool.token, settings=SessionSettings(graphs=False))
    yield on, off
    on.close()
    off.close()


def _figures(session) -> dict:
    return session.memory_info()["stretches"]


def _both(sessions, loop):
    """*loop(cp)* on the session with replay and on the one without; their results and the
    replay session's figures (the change over the loop)."""
    on, off = sessions
    before = _figures(on)
    with no_collection():
        with_replay = loop(module_for(on))
    after = _figures(on)
    with no_collection():
        without = loop(module_for(off))
    assert _figures(off)["held"] == 0
    change = {k: after[k] - before[k] for k in ("replays", "graphed", "fallbacks", "between_graphs",
                                                "copied")}
    change["held"] = after["held"]
    return with_replay, without, change


def test_a_hot_sync_with_a_changing_scalar_is_replayed_through_graphs(sessions):
    def loop(cp):
        x = cp.arange(1000, dtype=cp.float32)
        return [float((x + step * 0.37).sum()) for step in range(STEPS)]

    on, off, change = _both(sessions, loop)
    assert on == off
    assert on == [float((np.arange(1000, dtype=np.float32) + np.float32(s * 0.37)).sum())
                  for s in range(STEPS)] or not _numpy_pool()
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_a_stencil_that_writes_into_a_copy_is_bitwise_equal(sessions):
    def loop(cp):
        u = cp.asarray(np.random.default_rng(0).random((48, 40), dtype=np.float32))
        peaks = []
        for step in range(STEPS):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
            u = u.copy()
            u[1:-1, 1:-1] += (0.1 + step * 1e-3) * lap
            peaks.append(float(abs(u).max()))
        return peaks + [u.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED


def test_in_place_updates_of_an_input_reach_it(sessions):
    def loop(cp):
        w = cp.ones(64, dtype=cp.float64)
        g = cp.linspace(0, 1, 64)
        for step in range(STEPS):
            w -= 0.01 * step * g          # in place, on an array from before the stretch
            float(w.sum())
        return [w.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED


def test_writes_into_inputs_through_views_setitem_copyto_and_out_reach_them(sessions):
    """Only the inputs a stretch writes are copied back after a replay (found as it is
    captured): each way of writing into one must still reach the client's array, and an
    input only read must keep its values."""
    def loop(cp):
        a = cp.zeros(32, dtype=cp.float32)       # written through a view of it
        b = cp.zeros((4, 8), dtype=cp.float32)   # written by setitem
        c = cp.zeros(16, dtype=cp.float32)       # written by copyto (a function that returns nothing)
        d = cp.zeros(16, dtype=cp.float32)       # written as an out=
        e = cp.zeros(16, dtype=cp.float32)       # written by a method that returns nothing
        r = cp.arange(16, dtype=cp.float32)      # read only
        idx = cp.arange(0, 16, 3)
        o = cp.zeros((4, 4), dtype=cp.float32)   # written as a method's out, by position
        s = cp.zeros(4, dtype=cp.float32)        # ... likewise
        m = cp.arange(16, dtype=cp.float32).reshape(4, 4)
        for step in range(STEPS):                # (each one's values change every step)
            y = m + step
            y.dot(m, o)
            y.sum(0, None, s)
            del y
            v = a[4:12]
            v += r[:8] * 0.5
            del v                                # (a view kept past the sync is never graphed)
            b[1] = r[:8] + step
            cp.copyto(c, c + r)
            cp.add(d, r, out=d)
            e.put(idx, e[idx] + 1)
            float(a.sum() + b.sum() + c.sum() + d.sum() + e.sum())
        return [a.get(), b.get(), c.get(), d.get(), e.get(), r.get(), o.get(), s.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED


def test_random_draws_and_matmul_run_eagerly_between_graphs(sessions):
    def loop(cp):
        cp.random.seed(3)
        w = cp.asarray(np.linspace(-1, 1, 256, dtype=np.float32).reshape(16, 16))
        out = []
        for _ in range(STEPS):
            h = cp.random.rand(16, 16).astype(cp.float32)
            y = cp.tanh(h @ w) * 2 + 1
            out.append(float(y.sum()))
        return out

    on, off, change = _both(sessions, loop)
    assert on == off   # the generator advanced as without replay
    assert change["graphed"] >= REPLAYED


def test_a_guard_that_fails_falls_back_to_a_re_run(sessions):
    def loop(cp):
        out = []
        for step in range(STEPS):
            n = 100 if step < STEPS - 2 else 7        # the last two: another shape
            x = cp.arange(n, dtype=cp.float32)
            out.append(float((x * 2 - 1).sum()))
        return out

    # (arange's n is a literal: another n is another stretch; the input's shape is the guard)
    def loop_input(cp):
        xs = [cp.arange(100, dtype=cp.float32) for _ in range(2)] + [cp.arange(7, dtype=cp.float32)]
        out = []
        for step in range(STEPS):
            x = xs[0 if step < STEPS - 2 else 2]
            out.append(float((x * 2 - 1).sum()))
        return out

    on, off, _ = _both(sessions, loop)
    assert on == off
    on, off, change = _both(sessions, loop_input)
    assert on == off and on[-1] == float(np.arange(7, dtype=np.float32).sum() * 2 - 7)
    assert change["fallbacks"] >= 1


def test_a_loop_run_again_on_other_shapes_is_captured_for_them(sessions):
    """A loop held and replayed through graphs, then run on inputs of another shape (the
    same ops: the same key): its replays re-run from their records until STALE_AFTER in a
    row, then it is dropped, offered again and captured for the new shape; the results
    are those without replay. Offered again at most MAX_REOFFERS times a key."""
    def loop(cp):
        out = []
        for n in (100, 7):
            x = cp.arange(n, dtype=cp.float32)
            for step in range(3 * STEPS):
                out.append(float((x * 2 - 1).sum()))
        return out

    on, off, change = _both(sessions, loop)
    assert on == off
    # (each shape: REPEATS sightings before the offer; the second's first STALE_AFTER
    # replays re-run, then the stretch is counted and offered anew)
    assert change["fallbacks"] == STALE_AFTER
    assert change["graphed"] >= 2 * (3 * STEPS - REPEATS - 1) - STALE_AFTER - REPEATS - 1


def test_a_view_kept_past_the_stretch_is_made_again_and_stays_a_view(sessions):
    """A kept view of an input, written through in place: graphs serve it (the input's new
    value written back), and the view handed out is made again on the input itself
    (worker/kept_views.py), so that later writes to either are seen through the other."""
    def loop(cp):
        base = cp.zeros((8, 8), dtype=cp.float32)
        views, seen = [], []
        for step in range(STEPS):
            v = base[1]                  # kept: a view of base, as in CuPy
            v += step
            views.append(float(v.sum()))
            base[1, 0] = -1.0            # (another stretch: a write to the base) ...
            seen.append(float(v[0]))     # ... seen through the view
        return views + seen + [base.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert on[STEPS:2 * STEPS] == [-1.0] * STEPS
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_an_element_read_of_a_kept_result_is_served_by_graphs(sessions):
    """``float(v[0])``: CuPy's element is a 0-d view of ``v``, kept past the stretch (its
    read ends it; the client frees it after). It is made again on the ``v`` the replay
    hands out, not copied: a write to ``v`` afterwards is seen through it. (Such a
    stretch was never served by graphs on a GPU, H200 run 147; the NumPy device's
    element was a copy and hid it.)"""
    def loop(cp):
        a = cp.asarray(np.random.default_rng(7).random((16, 16), dtype=np.float32))
        v = cp.ones(16, dtype=cp.float32)
        out, kept = [], []
        for step in range(STEPS):
            w = a @ v
            v = w / cp.sqrt((w * w).sum())
            e, t = v[0], v.reshape(4, 4).T    # (a 0-d view; a view of a view)
            out.append(float(e))
            kept.append((v, e, t))
        for v, e, t in kept[-3:]:
            v[0] = 5.0                        # written through the base ...
            out += [float(e), float(t[0, 0]), float(t[1, 0])]   # ... seen in its views
        return out + [x.get() for x, _e, _t in kept]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert on[STEPS:STEPS + 2] == [5.0, 5.0]
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_aliases_and_views_of_inputs_kept_past_a_stretch_stay_what_they_are(sessions):
    """``cupy.asarray(x)`` is ``x`` itself, ``x.T`` and ``x.real`` views of it: kept past
    a replayed stretch, each is made again on the input, so that writes through one are
    seen through the others. A view of a temporary alone in its memory (``(x + 1)[2]``,
    the temporary dropped) is handed out as a copy, which nobody can tell from it; two
    views of one temporary keep the stretch off graphs, as before."""
    def loop(cp):
        x = cp.arange(12, dtype=cp.float64).reshape(3, 4)
        out = []
        for step in range(STEPS):
            same, t, r = cp.asarray(x), x.T, x.real
            y = x * 2 + step
            out.append(float(y.sum()))
            same[0, 1] = step                 # (next stretch: through the alias ...)
            out += [float(t[1, 0]), float(r[0, 1]), float(x[0, 1])]   # (... seen in all)
        return out + [x.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED // 2 and change["fallbacks"] == 0

    def of_a_temporary(cp):
        x = cp.arange(12, dtype=cp.float64)
        out, kept = [], []
        for step in range(STEPS):
            e = (x + step)[2]
            out.append(float(e))
            kept.append(e)
        return out + [float(e) for e in kept]

    on, off, change = _both(sessions, of_a_temporary)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0

    def two_of_a_temporary(cp):
        x = cp.arange(12, dtype=cp.float64)
        out = []
        for step in range(STEPS):
            t = x + step
            a, b = t[:4], t[2:6]   # (two views of one temporary, which goes)
            del t
            a += 1                 # (seen through b)
            out.append(float(b.sum()))
        return out

    on, off, change = _both(sessions, two_of_a_temporary)
    _bitwise(on, off)
    assert change["graphed"] == 0 and change["replays"] >= 1


def test_a_loop_that_draws_first_has_its_draw_and_its_array_gathered_by_its_graph(sessions):
    """A ``RandomState``'s draw opens the stretch (eager: cuRAND refuses capture) and the
    graph after it reads the draw and the loop's array, written in place. That graph's copy
    table gathers both (graph_copies.py): the only copy made apart is the array's write-back,
    one a replay, where the draw's copy and the array's copy in were two more (each a
    ``cudaMemcpyAsync``, ~9 µs of an H200 host's worker: benchmarks/worker_calls_probe.py).
    Values as without replay."""
    def loop(cp):
        cp.random.seed(3)
        x = cp.zeros(64, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            x += (cp.random.rand(64).astype(cp.float32) - 0.5) * 0.1
            out.append(float(x.mean()))
        return out + [x.get(), cp.random.rand(3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change
    # (a write-back a replay, and the copies of the sightings' and the capture's runs)
    assert change["copied"] <= change["graphed"] + 2 * REPEATS, change


def test_a_draw_between_two_graphs_is_copied_in_by_the_graph_after_it(sessions):
    """A draw between two graphs (Langevin's noise: a step computed, a ``RandomState``'s
    normal draw, the step's end): the graph after the draw copies it into its buffer by a
    copy table of its own, and the loop-carried array comes in by the first graph's: no
    copy made apart at a replay. Values as without replay."""
    def loop(cp):
        rs = cp.random.RandomState(4)
        x = cp.zeros(64)
        out = []
        for step in range(STEPS):
            y = x * 0.9 + 0.1
            x = y + rs.normal(0.0, 0.5, 64)
            out.append(float((x * x).mean()))
        return out + [x.get(), rs.normal(0.0, 1.0, 3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change
    assert change["copied"] <= 2 * REPEATS, change   # (the sightings' and capture's runs)


def test_an_eager_result_that_a_later_eager_op_names_is_in_its_buffer_before_it(sessions):
    """A draw, then an eager op on it before the next graph (``outer`` of the draw: cuBLAS's
    product of a vector by itself runs eagerly; a ``shuffle`` that writes it): the draw is
    copied into the graphs' buffer at once, not by the next graph's copy table, which would
    come after that op (found by review: the product read the last replay's draw)."""
    def loop(cp):
        rs = cp.random.RandomState(9)
        x = cp.zeros((8, 8))
        out = []
        for step in range(STEPS):
            r = rs.standard_normal(8)
            x = x * 0.5 + cp.outer(r, r)
            q = rs.random_sample(16)
            rs.shuffle(q)
            out.append(float(x.sum() + q[:3].sum()))
        return out + [x.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change


def test_an_eager_result_written_after_is_handed_out_as_written(sessions):
    """A draw the stretch then writes in place (``d = rs.rand(n); d *= 0.5``), kept past the
    step: the write went to the graphs' buffer standing for it, so that is what is handed out,
    not the draw's own array (found by review; before this session too)."""
    def loop(cp):
        rs = cp.random.RandomState(41)
        x = cp.zeros(8)
        out, kept = [], []
        for step in range(STEPS):
            d = rs.rand(8)
            d *= 0.5
            x = x + d
            kept.append(d)
            out.append(float(x.sum()))
        return out + [d.get() for d in kept]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change


def test_a_replay_that_fails_before_writing_an_eager_result_hands_out_the_ops_own(sessions):
    """A draw the stretch writes after (``d *= 0.5``), and a draw between that raises now and
    then (a negative scale, caught): where the replay fails before the write ran, the user's
    ``d`` is the draw as made, not the graphs' buffer, which holds the last replay's (found by
    a review of the fix above)."""
    def loop(cp):
        rs = cp.random.RandomState(11)
        x = cp.zeros(8)
        out = []
        for step in range(STEPS):
            d = rs.rand(8)
            try:   # (the error comes back where the ops are sent: at the read, or before)
                b = rs.normal(0.0, -1.0 if step % 5 == 4 else 1.0, 8)
                d *= 0.5
                y = x * 0.5 + d + b
                out.append(float(y.sum()))
                x = y
            except ValueError as exc:
                out += [type(exc).__name__, d.get()]
        return out + [x.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["replays"] >= 4, change   # (a failed step breaks the run: fewer)


def test_an_eager_op_that_returns_what_it_is_given_hands_out_no_buffer(sessions):
    """``real_if_close`` of a real array (eager) returns its operand, a graph's temporary:
    the client's ``z`` is a copy, not the graphs' buffer, which the next replay overwrites
    (found by review; before this session too)."""
    def loop(cp):
        x = cp.ones(4)
        out, kept = [], []
        for step in range(STEPS):
            z = cp.real_if_close(x * 0.5)
            x = x + z
            kept.append(z)
            out.append(float(x.sum()))
        return out + [z.get() for z in kept]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change


def test_an_array_given_as_output_is_written_by_the_replay(sessions):
    """``cupyx.scipy.ndimage``'s ``output=`` writes the array given: a draw, or an input, so
    written is the user's as without replay (the worker knew ``out=`` only; found by review,
    before this session too)."""
    from kernelproxy.modules import build_modules

    def loop(cp):
        ndi = build_modules()["cupyx.scipy.ndimage"]
        rs = cp.random.RandomState(1)
        x, w = cp.ones(16), cp.zeros(16)
        out = []
        for step in range(STEPS):
            d = rs.rand(16)
            ndi.uniform_filter(x * 0.5, 3, output=d)
            ndi.uniform_filter(x * 0.25 + 1.0, 3, output=w)
            x = x * 0.5 + d + w
            out.append(float(x.sum()))
        return out + [d.get(), w.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)


def test_kept_results_of_every_layout_leave_a_replay_with_their_values(sessions):
    """A replay hands each kept result out as a fresh array, copied by the last graph itself
    (its copy table): of several dtypes, sizes not a multiple of 16 bytes; the carried
    array goes in through the first graph's copies. Values, dtypes and shapes as without
    replay. (A kept view is made again on what a replay hands out: worker/kept_views.py.)"""
    def loop(cp):
        x = cp.linspace(0, 1, 96, dtype=cp.float32).reshape(8, 12)
        kept = []
        for step in range(STEPS):
            t = x * 2 + 1
            odd = t[::2, 1::3].copy()                    # 12 float32: 48 bytes
            small = (t[0, :3] > 1.5).astype(cp.int16)    # 6 bytes
            x = t * 0.5 - 0.25
            kept += [odd, small, x]
            float(odd.sum() + step)
        return [a.get() for a in kept]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_an_eager_op_that_fails_before_the_last_graph_hands_out_the_results_made(sessions):
    """The last graph copies the kept results out; when an eager op before it fails, the
    results made so far go out as before (copied after), with the op's error."""
    def loop(cp):
        cp.random.seed(5)
        x = cp.arange(16, dtype=cp.float32)
        out, kept = [], []
        for c in [5] * (STEPS - 2) + [0, 5]:
            y = x * 2 + 1
            kept.append(y)
            try:
                r = cp.random.randint(0, c, size=4)   # eager; fails for c == 0
                out.append(float((y[:4] + r).sum()))
            except ValueError as exc:
                out.append(type(exc).__name__)
            x = y * 0.5
        return out + [a.get() for a in kept]

    on, off, change = _both(sessions, loop)
    assert on[STEPS - 2] == "ValueError" and on[:STEPS] == off[:STEPS]
    _bitwise(on[STEPS:], off[STEPS:])
    assert change["graphed"] >= REPLAYED - 2


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_parameter_written_only_when_it_changes_keeps_the_sign_of_zero(sessions):
    """A replay writes a parameter into its graph's block only where it changed: 0.0 and
    -0.0 compare equal but are other bits, and a value that comes back after another must
    be written again."""
    values = [0.5] * 5 + [0.0, -0.0, -0.0, 0.0, 0.5, -0.0, 2.0, 2.0, 0.5, 0.0, 0.0]

    def loop(cp):
        x = cp.linspace(1, 2, 64, dtype=cp.float32)
        return [float((1.0 / (x * c)).max()) for c in values]

    on, off, change = _both(sessions, loop)
    assert on == off
    with np.errstate(divide="ignore"):
        expected = [float((np.float32(1.0) / (np.linspace(1, 2, 64, dtype=np.float32) * np.float32(c))).max())
                    for c in values]
    assert on == expected or not _numpy_pool()
    assert change["graphed"] >= len(values) - REPEATS - 1


def test_a_next_replay_set_up_ahead_for_other_inputs_is_set_up_again(sessions):
    """After each replay the worker sets the next one up as if the loop went on (its
    carried result in, the other inputs the same: GraphCopies.prepare). A loop that then
    takes another array, a carried one swapped for a constant, or drops its carry, must
    still get the values it would without replay."""
    def loop(cp):
        rng = np.random.default_rng(4)
        x = cp.asarray(rng.random(64, dtype=np.float32))
        y = cp.asarray(rng.random(64, dtype=np.float32))
        fresh = cp.asarray(rng.random(64, dtype=np.float32))
        out, kept = [], []
        for step in range(STEPS + 6):
            if step == STEPS - 2:
                x = fresh                 # not the carried result: another array
            elif step == STEPS:
                x, y = y, x               # the carry now where the constant was
            x = x * 0.5 + y * 0.25
            kept.append(x)
            out.append(float(x.sum()))
        return out + [a.get() for a in kept]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED


def test_kept_results_take_turns_only_in_arrays_nobody_holds(sessions):
    """A replay's kept result goes out in an array made for its slot before, once nobody
    holds that one (GraphCopies._made_for): the client freed it, and no view of it and no
    other array over its memory is left. A loop that keeps some results, views of others,
    slices that outlive their base, and drops the rest gets every value it would without
    replay."""
    def loop(cp):
        rng = np.random.default_rng(7)
        x = cp.asarray(rng.random(40, dtype=np.float32))
        y = cp.asarray(rng.random(40, dtype=np.float32))
        kept, views, tails = [], [], []
        for step in range(STEPS + 8):
            x = x * 0.75 + y
            if step % 3 == 0:
                kept.append(x)              # the array itself, held
            elif step % 3 == 1:
                views.append(x[1:7])        # a view: its base stays
            elif step % 4 == 2:
                tails.append(x[::5])        # a strided view of a result dropped next
            float(x.sum())
        return [a.get() for a in kept + views + tails] + [x.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_a_stretch_with_no_graph_is_let_go_when_measured(pool, sessions):
    """Two views of one temporary kept past their stretch make the stretch re-run only (no
    graph: worker/kept_views.py makes only views of inputs and kept results again, and
    copies only a view alone in its memory): timed, it is let go and dropped by the worker;
    its ops travel as ops again."""
    _on, off = sessions

    def loop(cp):
        base = cp.zeros((8, 8), dtype=cp.float32)
        views = []
        for step in range(3 * STEPS):
            t = base + step
            v, w = t[step % 2], t[step % 2, :4]   # kept: two views of a temporary
            del t
            w += 1                                # (seen through v)
            views.append(float(v.sum()))
        return views + [base.get()]

    with Session(pool.address, pool.token) as s:   # measured: the default
        with no_collection():
            measured = loop(module_for(s))
        mine, worker = s.stretches.figures(), _figures(s)
    with no_collection():
        _bitwise(measured, loop(module_for(off)))
    # (one stretch: ``t[step % 2]``'s index is a parameter, protocol/stretches.basic_index)
    assert mine["released"] == 1 and mine["not_graphed"] == mine["replays"] > 0
    assert worker["held"] == 0 and worker["graphed"] == 0


def test_attributes_are_captured_with_the_ops_around_them(sessions):
    """``x.T``, ``z.real``, ``z.imag`` (views, no launch) inside a stretch leave it graphed."""
    def loop(cp):
        x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
        z = (cp.arange(6) + 1j * cp.arange(6)).astype(cp.complex64)
        out = []
        for step in range(STEPS):
            out.append(float((x.T * 2 + step).sum() + (z.real - z.imag).sum()))
        return out

    on, off, change = _both(sessions, loop)
    assert on == off
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


MIB = 1 << 20


def _session_of_64_mib(pool) -> Session:
    """A session whose memory graphs' buffers soon fill (64 MiB), every repeated stretch
    held; on a GPU only: the NumPy device does not count graphs' buffers."""
    if _numpy_pool():
        pytest.skip("the NumPy device does not count graphs' buffers")
    return Session(pool.address, pool.token, memory_limit=64 * MIB,
                   settings=SessionSettings(replay_measured=False))


def test_an_op_that_does_not_fit_beside_held_graphs_drops_them_and_runs(pool):
    """Held graphs keep buffers of their own, counted against the session's memory (a GPU
    counts them; the NumPy device does not). An op that fits only without them drops every
    graph and runs, as it would without replay; the loop then goes on, captured again."""
    with _session_of_64_mib(pool) as s:
        cp = module_for(s)
        u = cp.ones(MIB, dtype=cp.float64)                      # 8 MiB (sums exact)
        with no_collection():
            sums = [float((u * 2 + step).sum()) for step in range(STEPS)]
        held = _figures(s)
        assert held["graph_bytes"] >= 16 * MIB, held            # u's copy, u * 2, ... (24 MiB)
        big = u.repeat(5)                                       # 40 MiB: fits only without them
        assert float(big.sum()) == 5.0 * MIB                    # (a method, retried as one)
        after = _figures(s)
        del big
        with no_collection():
            sums += [float((u * 2 + step).sum()) for step in range(4)]
    assert sums == [(2.0 + step) * MIB for step in range(STEPS)] + \
        [(2.0 + step) * MIB for step in range(4)]
    assert after["evictions"] == 1 and after["graph_bytes"] == 0


def test_a_stretch_whose_capture_would_not_fit_runs_as_without_replay(pool):
    """A capture keeps more than the ops need (the inputs' copies, every temporary): where
    that does not fit the session's memory and the ops alone do, the stretch is re-run —
    no error, the results as without replay."""
    with _session_of_64_mib(pool) as s:
        cp = module_for(s)
        u = cp.ones(2 * MIB, dtype=cp.float64)   # 16 MiB; the ops peak at 48, a capture at 64+
        with no_collection():
            sums = [float((u * 2 + step).sum()) for step in range(STEPS)]
        figures = _figures(s)
    assert sums == [(2.0 + step) * 2 * MIB for step in range(STEPS)]
    assert figures["replays"] >= REPLAYED and figures["graph_bytes"] == 0


def test_an_integer_parameter_out_of_range_raises_as_without_replay(sessions):
    def loop(cp):
        x = cp.zeros(4, dtype=cp.uint8)
        out = []
        for c in [1, 2, 3, 4, 5, 6, 300]:
            try:
                out.append(int((x + c).sum()))
            except Exception as exc:
                out.append(type(exc).__name__)
        return out

    on, off, _ = _both(sessions, loop)
    assert on == off and on[-1] == "OverflowError"


def test_an_error_in_a_replayed_stretch_names_its_line(sessions):
    """A held stretch whose inputs no longer fit its graph is re-run: the op's own error,
    its class and its line, as without replay."""
    on_session, _off = sessions
    cp = module_for(on_session)

    def step(a, b):
        return float((a * 2 + b).sum())   # the line the error names

    a, b = cp.ones(5), cp.ones(5)
    for _ in range(6):
        step(a, b)
    before = _figures(on_session)
    with pytest.raises(ValueError, match="broadcast") as caught:
        step(a, cp.ones(4))
    # Whether the failing step goes through the held stretch (a replay whose guard fails,
    # then the re-run) or runs eagerly is not the same from run to run: run alone this test
    # saw no replay every time, in its file's order one every time, in the full suite
    # either (2026-11-25, issue 40's note; the cause is not found yet). The error and the
    # line it names must be the same either way, which is what is asserted.
    assert _figures(on_session)["replays"] in (before["replays"], before["replays"] + 1)
    notes = "".join(getattr(caught.value, "__notes__", []))
    assert "raised by operator +" in notes and "test_stretch_replay.py" in notes
    assert step(a, b) == 15.0   # and the session goes on


def test_dropped_inputs_are_freed_as_without_replay(sessions):
    def loop(cp):
        x = cp.arange(500, dtype=cp.float32)
        for step in range(STEPS):
            x = x * 1.0001 + step          # each step drops the last step's x
            float(x.max())
        return [x.get()]

    def arrays(session):
        gc.collect()     # (earlier tests' garbage dropped now, not during the loop)
        session.sync()   # (the frees queued so far reach the worker)
        return session.memory_info()["arrays"]

    on_session, off_session = sessions
    before = arrays(on_session), arrays(off_session)
    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED
    assert arrays(on_session) - before[0] == arrays(off_session) - before[1] == 0


def test_a_held_stretch_rebuilds_the_records_the_client_sent(sessions):
    """The worker's re-run writes back exactly the records it was offered; its inputs and
    parameters are numbered as the client's key numbers them."""
    on, _off = sessions
    cp = module_for(on)
    x, y = cp.ones((3, 4)), cp.zeros(4)
    on.sync()
    eager, on.eager_flush = on.eager_flush, False
    with no_collection():
        start = on._seq + 1
        # (ops whose client needs no metadata before the sync: nothing is sent yet)
        z = (x * 0.25 + y).sum(axis=0) - y[::-1]
        w = cp.maximum(z, 2) * 3
        del z
        body = b"".join(on._ops)
        key = on.stretches.current
        header = codec.packb({"k": b""})
        stretch = HeldStretch(read_records(header + body))
        assert stretch.recorded_inputs == key.inputs == [x._h, y._h]
        assert stretch.recorded_outs == key.outs
        assert stretch.params == len(key.params) == 3   # 0.25, maximum's 2 and 3
        assert key.params == [0.25, 2, 3]
        assert stretch.rebuild(start, key.inputs, key.params, key.outs) == body
    on.eager_flush = eager
    on.sync()
    assert w.shape == (4,)


def test_a_held_stretch_with_a_call_of_several_results_rebuilds_its_records(sessions):
    """A call of several results (``api.ARRAYS``) takes a result slot a piece, in place
    order: the re-run writes its pieces' handles back as the list the client sent, and
    the ops that read a piece name its slot."""
    on, _off = sessions
    cp = module_for(on)
    x = cp.linspace(0.5, 9.5, 12)
    on.sync()
    eager, on.eager_flush = on.eager_flush, False
    with no_collection():
        cp.modf(x), cp.frexp(x)   # (a session's first call of each waits for its container)
        on.sync()
        start = on._seq + 1
        f, i = cp.modf(x)          # (opens the stretch: nothing cut before it)
        m, e = cp.frexp(i * 0.5)   # (joins it: it holds a call of several results)
        y = m * e + f
        body = b"".join(on._ops)
        key = on.stretches.current
        stretch = HeldStretch(read_records(codec.packb({"k": b""}) + body))
        assert stretch.several and key.several
        assert stretch.outs == len(key.outs) == 7   # (modf's two, i * 0.5, frexp's two, *, +)
        assert stretch.recorded_outs == key.outs
        frexp = [op for op in stretch.items if getattr(op, "name", None) == "frexp"][0]
        assert frexp.out is None and [s.n for s in frexp.outs] == [3, 4]
        assert stretch.rebuild(start, key.inputs, key.params, key.outs) == body
    on.eager_flush = eager
    on.sync()
    assert y.shape == (12,)


def test_a_stretch_whose_replays_are_not_faster_is_let_go_and_dropped(pool, sessions):
    """Timed (a clock of the test's own: replays take five times as long as the pipelined
    runs), the held stretch is let go: the worker drops it and its graphs, its ops travel
    again, and the results stay those without replay."""
    _on, off = sessions
    with Session(pool.address, pool.token) as s:   # measured: the default
        replay = s.stretches
        ticks = [0.0]

        def clock():   # (read as each sync point returns, while the stretch ended is known)
            replaying = any(how == "replay" for _times, how in replay._ending.values())
            ticks[0] += 5.0 if replaying else 1.0
            return ticks[0]
        replay._clock = clock

        def loop(cp):
            x = cp.arange(50, dtype=cp.float32)
            return [float((x * 0.5 + step).sum()) for step in range(3 * STEPS)]

        with no_collection():
            values = loop(module_for(s))
        worker = _figures(s)
        mine = replay.figures()
    with no_collection():
        assert values == loop(module_for(off))
    assert mine["released"] == 1 and mine["held"] == 0
    assert worker["held"] == 0 and worker["graph_bytes"] == 0   # dropped, memory and all
    assert mine["replays"] == 1 + TIMED_REPLAYS                 # and never replayed again


def test_graphs_off_on_the_client_offers_nothing(sessions):
    _on, off = sessions
    assert off.stretches is None
    cp = module_for(off)
    x = cp.ones(10)
    for _ in range(6):
        float((x + 1).sum())
    assert _figures(off)["held"] == 0


def test_graphs_off_on_the_worker_refuses_every_offer(monkeypatch):
    monkeypatch.setenv("GPUWB_GRAPHS", "0")   # (the pool's workers inherit it)
    with LocalPool(devices=TEST_DEVICES, lease_timeout=20.0, memory_limit=1 << 28) as pool:
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=True)) as s:
            cp = module_for(s)
            x = cp.ones(10)
            values = [float((x + i).sum()) for i in range(8)]
            figures = _figures(s)
    assert values == [10.0 + 10 * i for i in range(8)]
    assert figures["held"] == 0 and figures["refused"] >= 1 and figures["replays"] == 0


def test_a_variable_set_after_the_pool_started_reaches_none_of_its_workers(monkeypatch):
    """The pool's workers start with its process's environment as the pool started: a
    ``GPUWB_GRAPHS=0`` set later (for a session of a test's own, say) does not turn replay off
    in the workers started since, spares included, which would serve later sessions."""
    with LocalPool(devices=TEST_DEVICES, lease_timeout=20.0, memory_limit=1 << 28) as pool:
        monkeypatch.setenv("GPUWB_GRAPHS", "0")
        for _ in range(3):   # (each session takes a spare; the next is started meanwhile)
            settings = SessionSettings(graphs=True, replay_measured=False)
            with Session(pool.address, pool.token, settings=settings) as s:
                cp = module_for(s)
                x = cp.ones(10)
                with no_collection():
                    values = [float((x + i).sum()) for i in range(8)]
                figures = _figures(s)
            assert values == [10.0 + 10 * i for i in range(8)]
            assert figures["held"] == 1 and figures["refused"] == 0, figures


def test_graphs_rerun_on_the_worker_holds_stretches_and_reruns_every_replay(monkeypatch):
    """``GPUWB_GRAPHS=rerun``: offers are held and replayed, each replay from its records,
    none through graphs; the values are those of the ops run as sent."""
    monkeypatch.setenv("GPUWB_GRAPHS", "rerun")   # (the pool's workers inherit it)
    with LocalPool(devices=TEST_DEVICES, lease_timeout=20.0, memory_limit=1 << 28) as pool:
        settings = SessionSettings(graphs=True, replay_measured=False)
        with Session(pool.address, pool.token, settings=settings) as s:
            cp = module_for(s)
            x = cp.arange(10, dtype=cp.float64)
            with no_collection():
                values = [float((x * 0.5 + i).sum()) for i in range(STEPS)]
            figures = _figures(s)
    assert values == [float((np.arange(10, dtype=np.float64) * 0.5 + i).sum()) for i in range(STEPS)]
    assert figures["held"] == 1 and figures["replays"] >= REPLAYED
    assert figures["graphed"] == 0 and figures["graph_bytes"] == 0


def _numpy_pool() -> bool:
    return TEST_DEVICES in ("cpu", "numpy") or TEST_DEVICES.startswith("cpu")


@pytest.mark.skipif(_numpy_pool(), reason="custom CUDA kernels need a GPU pool")
def test_a_users_kernels_inside_a_held_stretch_are_captured_with_it(sessions):
    """An ElementwiseKernel, a ReductionKernel and a RawKernel that writes its output are
    launches like any other in a loop's body: the stretch is served by its graphs (not
    re-run op by op), none of them run eagerly between two graphs (the RawKernel did till
    the forty-eighth session), bitwise as without replay."""
    add = """extern "C" __global__ void add_one(float* a, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) a[i] += 1.0f;
    }"""

    def loop(cp):
        axpy = cp.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
                                    "z = a * x + y", "axpy_replayed")
        l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_replayed")
        bump = cp.RawKernel(add, "add_one")
        x = cp.arange(4096, dtype=cp.float32) / 4096
        y = cp.ones(4096, dtype=cp.float32)
        a = cp.full((), 0.5, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            z = axpy(x, y, a) - step * 1e-3
            bump((16,), (256,), (z, np.int32(4096)))
            x = z * 0.25
            out.append(float(l2(x)))
        return out + [x.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change
    # (the closing read runs between the graphs: one a replay, and the capture's; the
    # RawKernel eager, two a replay)
    assert change["between_graphs"] <= change["replays"] + 2, change


def test_a_norm_read_every_step_is_captured_with_the_ops_around_it(sessions):
    """``float(linalg.norm(r))`` of element-wise orders (heat2d's residual) is captured
    with the ops around it, bitwise as without replay; a matrix's 2-norm and nuclear norm
    (singular values: cuSOLVER, which refuses capture) run eagerly between the graphs."""
    def loop(cp):
        u = cp.asarray(np.linspace(0, 1, 64 * 64, dtype=np.float32).reshape(64, 64))
        v = cp.arange(10, dtype=cp.float64) - 4.5
        out = []
        for step in range(STEPS):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + step
            out.append(float(cp.linalg.norm(lap)))
            out.append(float(cp.linalg.norm(lap, "fro") + cp.linalg.norm(v, ord=1)
                             + cp.linalg.norm(v, cp.inf)))
            out.append(float(cp.linalg.norm(lap[:8, :8] * 2, 2)))
            out.append(float(cp.linalg.norm(lap[:8, :8], ord="nuc")))
        return out

    on, off, change = _both(sessions, loop)
    assert on == off
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0


def test_which_norms_run_eagerly_between_graphs():
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    from gpu_backend.worker.eager_ops import eager_by_nature as _eager_by_nature
    from gpu_backend.worker.stretches import Op, Slot

    def norm(*args, name="linalg.norm", **kwargs):
        return _eager_by_nature(Op(0, m.KIND_FUNCTION, api.ARRAY, Slot("r", 0), name, None,
                                   [Slot("i", 0), *args], kwargs), {})

    assert not norm() and not norm("fro") and not norm(1) and not norm(ord=-1)
    assert not norm(float("inf")) and not norm(ord=0)
    assert norm(2) and norm(-2) and norm(ord="nuc")
    assert norm(Slot("p", 0))               # (an order the loop changes: not known here)
    assert norm(name="linalg.solve") and norm(name="linalg.inv")


def test_a_minibatch_gathered_by_integer_indices_is_captured_with_the_ops_around_it(sessions):
    """SGD's step: an array of indices picks a minibatch's rows (``x[idx]``, an index of an
    integer input: captured with the ops around it; a different index array each step, as
    an upload's would be), beside an assignment through them (eager between the graphs);
    bitwise as without replay. (A boolean mask's selection, eager too, is sized by its
    values: a stretch holding one is offered again whenever its size changes, so the rule's
    test below has it.)"""
    rng = np.random.default_rng(21)
    data = rng.random((400, 8), dtype=np.float32)
    picks = [rng.integers(0, 400, 32) for _ in range(4)]

    def loop(cp):
        x = cp.asarray(data)
        idxs = [cp.asarray(p) for p in picks]
        w = cp.ones(8, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            idx = idxs[step % 4]
            xb = x[idx]
            err = xb @ w - 0.5
            w = w - 0.01 * (xb.T @ err)
            z = cp.zeros(400, dtype=cp.float32)
            z[idx] = err
            out.append(float((err * err).mean() + z.sum()))
        return out + [w.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change


def test_which_indexings_run_eagerly_between_graphs():
    """A getitem by integer inputs, or by results of the stretch that were integer arrays
    in its offered run (``p[rows, y]`` of an ``arange``, ``centres[labels]`` of an
    ``argmin``), is captured; by a boolean input, by a result not known to be integers, or
    an assignment by any array, eager."""
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    from gpu_backend.worker.eager_ops import eager_by_nature as _eager_by_nature
    from gpu_backend.worker.stretches import Op, Slot

    inputs = {1: np.arange(4, dtype=np.int64), 2: np.arange(4, dtype=np.uint8),
              3: np.ones(4, dtype=bool), 4: np.arange(4.0)}

    def index(name, *keys, want=api.ARRAY, ints=frozenset()):
        return _eager_by_nature(Op(0, m.KIND_OPERATOR, want, Slot("r", 0), name, None,
                                   [Slot("i", 0), *keys], {}), inputs, ints)

    assert not index("getitem", Slot("i", 1)) and not index("getitem", Slot("i", 2))
    assert not index("getitem", (Slot("i", 1), slice(None)))
    assert not index("getitem", slice(1, None))
    assert index("getitem", Slot("i", 3)) and index("getitem", Slot("i", 4))
    assert index("getitem", Slot("r", 5)) and index("getitem", (Slot("i", 1), Slot("i", 3)))
    assert index("setitem", Slot("i", 1), Slot("i", 4), want=api.NONE)
    ints = frozenset({5, 6})
    assert not index("getitem", Slot("r", 5), ints=ints)
    assert not index("getitem", (Slot("r", 5), Slot("i", 1)), ints=ints)
    assert index("getitem", (Slot("r", 5), Slot("r", 7)), ints=ints)
    assert index("getitem", (Slot("r", 5), Slot("i", 3)), ints=ints)
    assert index("setitem", Slot("r", 5), Slot("i", 4), want=api.NONE, ints=ints)


def test_which_products_run_eagerly_between_graphs():
    """A product of two matrices (or a matrix and a vector) of one float or complex dtype is
    made inside the graphs (devices/product_capture.py), and so is one through a result (tried
    in the capture); one given ``out=``, a Python value, or inputs with which CuPy would reach
    cuBLAS some other way (a batch of matrices, mixed dtypes, half floats) runs eagerly, and
    integer or vector products (CuPy's own kernels, no cuBLAS) are captured."""
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    from gpu_backend.worker.eager_ops import eager_by_nature as _eager_by_nature, lane_runs_eagerly
    from gpu_backend.worker.stretches import Op, Slot

    inputs = {0: np.ones((4, 3), np.float32), 1: np.ones((3, 5), np.float32),
              2: np.ones(3, np.float32), 3: np.ones((2, 4, 3), np.float32),
              4: np.ones((3, 5), np.float64), 5: np.ones((4, 3), np.int64),
              6: np.ones((3, 5), np.int64), 7: np.ones((4, 3), np.float16),
              8: np.ones((3, 5), np.float16), 9: np.ones((3, 5), np.complex64),
              10: np.ones((4, 3), np.complex64), 11: np.ones((2, 3, 5), np.float32)}

    def product(kind, name, a, b, **kwargs):
        if kind == m.KIND_METHOD:
            op = Op(0, kind, api.ARRAY, Slot("r", 0), name, a, [b], kwargs)
        else:
            op = Op(0, kind, api.ARRAY, Slot("r", 0), name, None, [a, b], kwargs)
        return _eager_by_nature(op, inputs)

    i = lambda n: Slot("i", n)   # noqa: E731
    for kind, name in ((m.KIND_OPERATOR, "matmul"), (m.KIND_FUNCTION, "matmul"),
                       (m.KIND_FUNCTION, "dot"), (m.KIND_METHOD, "dot")):
        assert not product(kind, name, i(0), i(1))                 # matrices, float32
        assert not product(kind, name, i(0), i(2))                 # a matrix and a vector
        assert not product(kind, name, i(10), i(9))                # complex64
        assert not product(kind, name, Slot("r", 7), i(1))         # a result: tried
        assert not product(kind, name, i(5), i(6))                 # integers: CuPy's kernel
        assert not product(kind, name, i(2), i(2))                 # two vectors: a sum
        assert product(kind, name, i(3), i(1))                     # a batch by a matrix
        assert product(kind, name, i(0), i(4))                     # float32 by float64
        assert product(kind, name, i(7), i(8))                     # half floats
        assert product(kind, name, i(0), Slot("p", 0))             # a Python value
    assert not product(m.KIND_OPERATOR, "matmul", i(3), i(11))   # two batches of one shape
    assert not product(m.KIND_FUNCTION, "matmul", i(3), i(11))
    assert product(m.KIND_FUNCTION, "dot", i(3), i(11))          # (dot's another product)
    assert product(m.KIND_METHOD, "dot", i(3), i(11))
    assert product(m.KIND_FUNCTION, "matmul", i(0), i(1), out=Slot("r", 3))
    assert not product(m.KIND_FUNCTION, "dot", i(0), i(1), out=None)
    lane_op = Op(0, m.KIND_OPERATOR, api.ARRAY, Slot("r", 0), "matmul", None, [i(3), i(1)], {})
    assert lane_runs_eagerly(lane_op)   # (eager, it is still run ahead by the steady lane)


def test_matrix_products_are_made_inside_the_graphs_and_give_the_bits(sessions):
    """Logistic regression's and an MLP layer's products (``X @ w``, ``X.T @ r``, ``dot``,
    ``matmul``, a method's ``dot``, a row vector times a matrix, two vectors, a batch of
    matrices by a batch of one shape) replay inside
    the stretch's graphs: bitwise as without replay (on a GPU: cuBLAS's GEMM captured against
    CuPy's eager call), and no op runs between the graphs but each step's reads."""
    rng = np.random.default_rng(31)
    data = rng.random((64, 8), dtype=np.float32)
    hidden = rng.random((8, 6), dtype=np.float32)
    target = rng.random(64, dtype=np.float32)

    def loop(cp):
        x, w1, y = cp.asarray(data), cp.asarray(hidden), cp.asarray(target)
        w = cp.zeros(8, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            h = cp.maximum(cp.matmul(x, w1), 0)          # (64, 6)
            g = cp.dot(h, w1.T)                          # (64, 8)
            r = x @ w - y                                # (64,)
            w = w - 0.05 * (x.T @ r) / 64 + 0.001 * (r @ g) + 1e-4 * g.dot(w1).sum(axis=1)[:8]
            hb = h.reshape(4, 16, 6)                     # two batches of one shape
            out.append(float(r @ r) + float((hb @ hb.transpose(0, 2, 1)).sum()))
        return out + [w.get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change
    assert change["between_graphs"] <= change["replays"] * 2, change   # (the two reads alone)


def test_a_product_the_graphs_cannot_make_runs_between_them(sessions):
    """A batch of matrices multiplied by one matrix, broadcast, through the stretch's own
    results (CuPy reaches cuBLAS for it, by pointer arrays, and refuses under capture; the
    NumPy device refuses it there as CuPy does): the
    capture refuses it once, and from the next capture on it runs eagerly between the
    graphs; bitwise as without replay."""
    rng = np.random.default_rng(32)
    data = rng.random((4, 6, 6), dtype=np.float32)

    def loop(cp):
        x = cp.asarray(data)
        out = []
        for step in range(STEPS):
            a = x + step
            b = (x[0] * 0.5).T
            out.append(float((a @ b).sum()))
        return out

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change
    assert change["between_graphs"] >= 2 * (change["replays"] - 2), change   # (the product, the read)


def test_a_gather_through_integer_results_is_captured_and_gives_the_bits(sessions):
    """The MLP's loss and k-means' assignment: ``p[rows, y]`` where ``rows`` is an
    ``arange`` and ``y`` a minibatch's labels gathered in the step, and ``centres[labels]``
    where ``labels`` is an ``argmin``, both results of the stretch: captured as gathers
    (their index arrays integers in the offered run), bitwise as without replay, and the
    assignment through them (``grad[rows, y] -= 1``) eager between the graphs."""
    rng = np.random.default_rng(22)
    data = rng.random((300, 4), dtype=np.float32)
    labels_all = rng.integers(0, 3, 300)
    picks = [rng.integers(0, 300, 16) for _ in range(3)]

    def loop(cp):
        x, y_all = cp.asarray(data), cp.asarray(labels_all)
        idxs = [cp.asarray(p) for p in picks]
        centres = x[:3].copy()
        out = []
        for step in range(STEPS):
            idx = idxs[step % 3]
            xb, yb = x[idx], y_all[idx]
            d = ((xb[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
            labels = d.argmin(axis=1)
            p = cp.exp(-d) / cp.exp(-d).sum(axis=1, keepdims=True)
            rows = cp.arange(16)
            grad = p.copy()
            grad[rows, yb] -= 1
            out.append(float(-cp.log(p[rows, yb] + 1e-9).mean() + (xb - centres[labels]).sum()
                             + grad.sum()))
        return out

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change



def test_which_generator_draws_the_graphs_make():
    """A ``Generator``'s plainest draws (``random``, ``uniform``, ``standard_normal``,
    ``integers``, …: draw_journal.CAPTURED_DRAWS) are captured with the ops around
    them, given values or parameters (baked into the graph: StretchGraph.baked); one given an
    array, ``out=``, one whose CuPy code uploads its parameters (``standard_gamma``), or a
    ``RandomState``'s draw (cuRAND keeps its position on the host) runs eagerly."""
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    from gpu_backend.worker.eager_ops import eager_by_nature as _eager_by_nature
    from gpu_backend.worker.stretches import Op, Slot

    def draw(name, *args, target=7, **kwargs):
        op = Op(0, m.KIND_OBJECT, api.ARRAY, Slot("r", 0), name, target, list(args), kwargs)
        return _eager_by_nature(op, {})

    assert not draw("random.Generator.random", 100)
    assert not draw("random.Generator.random", size=(4, 5), dtype="float32")
    assert not draw("random.Generator.standard_normal", 1000)
    assert not draw("random.Generator.integers", 0, 10, 50)
    assert not draw("random.Generator.exponential", 2.0, 30)
    assert not draw("random.Generator.standard_exponential", 30)
    assert not draw("random.Generator.uniform", -1.0, 1.0, 100)
    assert draw("random.Generator.standard_gamma", 2.0, 30)              # uploads its shape
    assert not draw("random.Generator.exponential", Slot("p", 0), 30)   # (a parameter: baked)
    assert not draw("random.Generator.integers", Slot("p", 0), Slot("p", 1), 8)
    assert draw("random.Generator.standard_gamma", Slot("i", 0), 30)    # an array
    assert draw("random.Generator.standard_normal", 10, out=Slot("r", 1))
    assert draw("random.Generator.binomial", 10, 0.5, 30)               # a state of its own
    assert draw("random.RandomState.standard_normal", 1000)             # cuRAND's host API
    assert draw("random.Generator.random", 100, target=Slot("i", 0))


def test_a_generators_draws_are_made_inside_the_graphs_and_give_its_numbers(sessions):
    """The bootstrap of benchmarks/program_bodies.py (``default_rng``: resample weights and
    normal noise drawn every step, the weighted mean read) with integers drawn too: its draws
    replay inside the stretch's graphs, each launch the generator's next numbers (bitwise as
    without replay; on a GPU CuPy's kernels moving the states on the device), no op between
    the graphs but the read; and the generator drawn from after the loop goes on from where
    the loop left it."""
    sample = np.random.default_rng(17).standard_normal(512)

    def loop(cp):
        rng = cp.random.default_rng(16)
        data = cp.asarray(sample)
        out = []
        for _ in range(STEPS):
            w = rng.random(512)
            noisy = data + 0.01 * rng.standard_normal(512)
            k = rng.integers(0, 512, 8)
            out.append(float((w * noisy).sum() / w.sum() + noisy[k].sum()))
        return out + [rng.random(5).get(), rng.standard_normal(3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change
    assert change["between_graphs"] <= change["replays"], change   # (the read alone)


def test_a_generator_draws_scalar_baked_into_its_graph_changes_and_it_is_captured_again(sessions):
    """A Generator's draw given a parameter (``rng.integers(0, size, batch)`` from a replay
    buffer that fills, then stays full; ``rng.uniform(-s, s)`` whose bound changes once):
    captured with the value it had, inside the graphs; a replay given another value
    captures the stretch again with that draw eager, given each replay's value. The numbers
    are those of no replay (local CuPy's on a GPU), and once the values settle the draws
    are made inside the graphs again only in a stretch that never changed them."""
    def loop(cp):
        rng = cp.random.default_rng(41)
        buffer = cp.arange(512, dtype=cp.float64)
        out = []
        for i in range(STEPS):
            size = min(64 + 64 * i, 512)             # (grows, then full: the same value)
            k = rng.integers(0, size, 8)
            bound = 1.0 if i < STEPS // 2 else 2.0   # (changes once)
            noise = rng.uniform(-bound, bound, 8)
            out.append(float((buffer[k] * noise).sum()))
        return out + [rng.random(3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    # (the replay whose value differed re-ran its records, once: the recapture's)
    assert change["graphed"] >= REPLAYED - 1 and change["fallbacks"] == 1, change
    ref = reference_module()
    if ref.__name__ == "cupy":   # (the NumPy device's draws are NumPy's)
        _bitwise(on, loop(ref))


def test_a_generator_draws_numpy_scalar_baked_into_its_graph_is_kept(sessions):
    """A NumPy scalar given to a Generator's draw made in the graphs (``np.float64(-1.0)``,
    sent as the value it holds and cast back on the worker): the graph keeps it, as it keeps
    a Python float; no replay is re-run for it (found by review: the cast value never
    matched the sent one, so every such stretch was captured twice)."""
    def loop(cp):
        rng = cp.random.default_rng(43)
        out = []
        for _ in range(STEPS):
            out.append(float(rng.uniform(np.float64(-1.0), 1.0, 32).sum()))
        return out + [rng.random(2).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED and change["fallbacks"] == 0, change


def test_a_capture_refused_after_a_generators_draw_draws_once(sessions):
    """A segment that draws from a Generator and then makes a product the graphs cannot
    (a batch by one matrix, through results): its capture is refused after the draw, and
    the segment runs eagerly from the generator's state before it (the NumPy device's
    capture ran the draw: put back; a GPU's drew nothing), so each step's numbers are the
    generator's next, as without replay; the next capture makes the draw in a graph."""
    data = np.random.default_rng(33).random((4, 6, 6))

    def loop(cp):
        rng = cp.random.default_rng(5)
        x = cp.asarray(data)
        out = []
        for _ in range(STEPS):
            a = x + rng.standard_normal((4, 6, 6))
            b = (x[0] * 0.5).T
            out.append(float((a @ b).sum()))
        return out + [rng.random(3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change


def test_a_generator_given_another_bit_generator_draws_from_it(sessions):
    """``rng.bit_generator = ...`` between replays (the graphs that drew through the old one
    are captured again: its states' address on a GPU, its bound method on the NumPy device)
    and inside the step, alternating two bit generators (its draws then run eagerly): every
    number is the one the Generator draws without replay."""
    def between(cp):
        rng = cp.random.default_rng(3)
        out = []
        for phase in range(3):
            for _ in range(STEPS):
                out.append(float(rng.random(8).sum()))
            rng.bit_generator = cp.random.XORWOW(123 + phase)
        return out + [rng.random(3).get()]

    def inside(cp):
        rng = cp.random.default_rng(4)
        bits = [cp.random.XORWOW(7), cp.random.XORWOW(8)]
        out = []
        for step in range(STEPS):
            rng.bit_generator = bits[step % 2]
            out.append(float((rng.random(8) + rng.standard_normal(8)).sum()))
        return out + [rng.random(3).get()]

    for loop in (between, inside):
        on, off, change = _both(sessions, loop)
        _bitwise(on, off)
        assert change["replays"] >= REPLAYED, (loop.__name__, change)


def test_two_generators_over_one_bit_generator_put_back_in_order(sessions):
    """Two Generators over one bit generator, drawn in a segment whose capture is then
    refused (a batch by one matrix through results): the bit generator is put back to its
    state before the first draw, not the second's, and the segment's eager run draws the
    numbers once, in order."""
    data = np.random.default_rng(33).random((4, 6, 6))

    def loop(cp):
        bits = cp.random.XORWOW(5)
        g1, g2 = cp.random.Generator(bits), cp.random.Generator(bits)
        x = cp.asarray(data)
        out = []
        for _ in range(STEPS):
            a = x + g1.standard_normal((4, 6, 6)) + g2.standard_normal((4, 6, 6))
            out.append(float((a @ (x[0] * 0.5).T).sum()))
        return out + [g1.random(3).get()]

    on, off, change = _both(sessions, loop)
    _bitwise(on, off)
    assert change["graphed"] >= REPLAYED, change
