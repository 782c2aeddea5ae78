"""The arrays a loop downloads right after a replayed stretch, sent with that stretch's reply
(kernelproxy/trailing_downloads.py; the header's ``G``, gpu_backend/worker/transfers.py
``prefetch_downloads``). ``out.append((z.get(), w.get(), q.get()))`` was three messages a
step, the second and third each a round trip for an array the worker had ready; after two
steps alike it is one.

Each loop runs on a session of a pool whose workers run every replay ahead and on one with
stretch replay off, compared bitwise; the client's figures say how many downloads the
replies answered. What must never happen: a copy handed out after the array changed (an
in-place write, an upload into it, between the replay and the download), or one array's
bytes for another's."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpu_backend.protocol.stretches import REPEATS
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.trailing_downloads import PREFETCH_BYTES

from ..differential import POOL_RUNS_NUMPY, assert_bitwise
from ..quiet_gc import no_collection
from ..run_ahead_sessions import pool_running_ahead

STEPS = 40
#: steps whose trailing downloads a reply answers at least: after the stretch is held
#: (REPEATS sightings), captured, and seen followed by the same downloads twice
ANSWERED = STEPS - REPEATS - 6
PAUSE = 0.001


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _run(pool, loop, address=None, **settings) -> tuple:
    """*loop(cp)* on a fresh session (*settings*), its messages a step, its trailing
    downloads' figures; and on one without replay: both results."""
    with Session(address or pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, **settings)) as s:
        with no_collection():
            batches = s._batch
            got = loop(module_for(s))
            batches = s._batch - batches
        figures = dict(s.trailing.figures(), batches=batches,
                       prefetched=s.memory_info()["prefetched"])
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        with no_collection():
            want = loop(module_for(s))
    return got, want, figures


def _three_downloads(cp, n=100, steps=STEPS):
    """A loop-carried array stepped, two more results of the step, all three downloaded."""
    x = cp.arange(n, dtype=cp.float32)
    out = []
    for i in range(steps):
        x = x * 0.5 + 1.0
        w = x + 2
        q = (x * 3).astype(cp.int32)
        out.append((x.get(), w.get(), q.get()))
        time.sleep(PAUSE)
    return out


def _after_a_read(cp):
    """A step's loss read (a value, not a download), then two results downloaded; one of
    them through ``cupy.asnumpy`` in Fortran order."""
    w = cp.linspace(0, 1, 64, dtype=cp.float64).reshape(8, 8)
    out = []
    for i in range(STEPS):
        g = w - 0.25
        w = w - 0.1 * g
        out.append(float((g ** 2).sum()))
        out.append(cp.asnumpy(w, order="F"))
        out.append(g.get())
        time.sleep(PAUSE)
    return out


def test_the_downloads_after_a_replay_come_with_its_reply(pool):
    got, want, figures = _run(pool, _three_downloads)
    assert_bitwise(got, want)
    assert figures["hits"] >= 2 * ANSWERED, figures
    assert figures["prefetched"] >= figures["hits"] and figures["wasted"] == 0, figures
    # (one message a step once answered, three before)
    assert figures["batches"] <= 3 * STEPS - 2 * ANSWERED + 4, figures


def test_after_a_value_read_and_in_fortran_order(pool):
    got, want, figures = _run(pool, _after_a_read)
    assert_bitwise(got, want)
    assert [v.flags.f_contiguous for v in got[1::3]] == [True] * STEPS
    assert figures["hits"] >= 2 * ANSWERED, figures


def test_over_tcp_each_copy_is_its_step_s_when_the_next_step_runs_ahead(pool):
    """Over tcp a frame over 64 KiB goes after the reply without a copy: the arrays sent
    before they were asked for are the step's, not the step run ahead's."""
    def loop(cp):
        return _three_downloads(cp, 1 << 16)

    got, want, figures = _run(pool, loop, address=pool.tcp_address)
    assert_bitwise(got, want)
    assert figures["hits"] >= 2 * ANSWERED, figures


def test_a_result_of_the_step_s_first_stretch_downloaded_after_its_second(pool):
    """``(int(q.sum()), int(r.sum()), f.get())``: ``f`` is made by the stretch the first read
    closes and downloaded after the second's: asked for with the second's replay."""
    def loop(cp):
        x = cp.arange(-20, 20, dtype=cp.int64)
        d = cp.asarray(np.array([1, 2, -3, 5] * 10, dtype=np.int64))
        out = []
        for i in range(STEPS):
            q = x // d
            r = x % d
            f = (x * 1.0) % (d * 0.5 + (i % 3) + 1)
            x = (q + r + i) % 41 - 20
            out.extend((int(q.sum()), int(r.sum()), f.get()))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] >= ANSWERED, figures


def test_an_input_the_stretch_writes_downloaded_after_it(pool):
    """An array made before the loop, written each step through ``out=`` (an input of the
    stretch, not a result) and downloaded after the step's read."""
    def loop(cp):
        k = cp.arange(1, 13, dtype=cp.int8)
        o1 = cp.zeros(24, dtype=cp.int64)
        out = []
        for i in range(STEPS):
            cp.cumsum(k, dtype=cp.int64, out=o1[::2])
            k = ((k * 3 + 1) % 50).astype(cp.int8)
            out.extend((int(k.sum()), o1.get()))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] >= ANSWERED, figures


def test_a_write_between_the_replay_and_the_download_is_seen(pool):
    """Every eighth step writes the array in place, or uploads into it, after the closing
    read and before its download: the copy the reply brought is no longer the array's, and
    the download goes to the pool."""
    def loop(cp):
        x = cp.arange(50, dtype=cp.float64)
        out = []
        for i in range(STEPS):
            x = x * 0.5 + 1.0
            w = x * 2
            out.append(x.get())
            if i % 16 == 6:
                w += 1
            elif i % 16 == 14:
                w.set(np.full(50, float(i)))
            out.append(w.get())
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] >= 16, figures   # (answered at the steps between)
    assert figures["wasted"] >= 3, figures  # (sent, then written before it was asked for)


def test_a_download_some_steps_leave_out(pool):
    """A result downloaded at some steps only: sent with a reply at most once for nothing
    before the client stops asking, and asked again after two steps that download it."""
    def loop(cp):
        x = cp.arange(32, dtype=cp.int64)
        out = []
        for i in range(STEPS):
            x = (x * 3 + 1) % 1009
            w = x % 7
            out.append(x.get())
            if i % 8 < 5:
                out.append(w.get())
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] > 0, figures
    assert figures["wasted"] <= STEPS // 8 + 1, figures


def test_the_same_array_twice_and_a_view_of_it(pool):
    """``w.get()`` twice (two arrays of their own: writing one leaves the other) and a view's
    download: the second and the view's go to the pool."""
    def loop(cp):
        x = cp.arange(40, dtype=cp.float32)
        out = []
        for i in range(STEPS):
            x = x * 0.5 + 1.0
            w = x - 3
            out.append(x.get())
            a, b = w.get(), w.get()
            assert a is not b and not np.shares_memory(a, b)
            out.extend((a, b, w[::3].get()))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] >= ANSWERED, figures


def test_a_large_array_is_not_sent_before_it_is_asked_for(pool):
    """Arrays over PREFETCH_BYTES are downloaded when asked: their own transfer is most of
    their cost, and a wrong guess would cost as much again."""
    n = PREFETCH_BYTES // 8 + 1

    def loop(cp):
        x = cp.zeros(4, dtype=cp.float64)
        big = cp.zeros(n, dtype=cp.float64)
        out = []
        for i in range(12):
            x = x + 1
            big = big + 1
            out.append(x.get())
            out.append(float(big.get()[-1]))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["asked"] == 0 and figures["prefetched"] == 0, figures


def test_an_op_failing_in_the_stretch_sends_nothing_ahead(pool):
    """A step whose op fails now and then (an index out of range) before the closing
    download: the error is raised where it was, and the result downloaded after is the
    pool's, not a copy from a reply."""
    def loop(cp):
        x = cp.arange(20, dtype=cp.float32)
        out = []
        for i in range(STEPS):
            x = x + 1.0
            w = x * 2
            try:
                out.append(x[i % 23].get())
                out.append(w.get())
            except IndexError as e:
                out.append(type(e).__name__)
                out.append(w.get())
            time.sleep(PAUSE)
        return out

    got, want, _figures = _run(pool, loop)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_bitwise([v for v in got if type(v) is not str], [v for v in want if type(v) is not str])
    errors = [v for v in got if type(v) is str]
    assert errors == [v for v in want if type(v) is str] and "IndexError" in errors


def test_off_it_sends_nothing_ahead(pool):
    got, want, figures = _run(pool, _three_downloads, prefetch=False)
    assert_bitwise(got, want)
    assert figures["asked"] == figures["hits"] == figures["prefetched"] == 0, figures
    assert figures["batches"] >= 3 * STEPS - 2, figures


def test_a_value_read_beside_a_download_comes_with_the_reply(pool):
    """``float(mx)`` closes the step, ``t.get()`` and ``float(v)`` (a 0-d result) follow:
    both answered from the reply, the value as the pool's conversion gives it."""
    def loop(cp):
        X = cp.linspace(-1, 1, 60, dtype=cp.float32).reshape(6, 10)
        out = []
        for i in range(STEPS):
            X = X * 0.99 + 0.01
            mx = X.max()
            t = X.sum(axis=1, dtype=cp.float64)
            v = X.var(ddof=1)
            k = (X > 0).sum()
            out.append(float(mx))
            out.append(t.get())
            out.extend((float(v), int(k), bool(k), complex(v)))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert figures["hits"] >= 3 * ANSWERED, figures   # (t, v and k each step)


def test_reads_alone_after_a_replay_are_left_to_the_lane(pool):
    """``float(loss)`` then ``float(acc)``, nothing downloaded: no message asks for the
    second (a message with G is none the steady lane serves); the lane serves the loop."""
    def loop(cp):
        x = cp.linspace(0, 1, 64)
        out = []
        for i in range(STEPS):
            x = x * 0.9 + 0.05
            loss = (x * x).sum()
            acc = (x > 0.5).mean()
            out.extend((float(loss), float(acc)))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["asked"] == 0 and figures["hits"] == 0, figures


def test_values_the_pool_would_fail_for_go_to_the_pool(pool):
    """``int`` of a NaN (ValueError) and ``float`` of a complex (TypeError) raise where and
    as the pool does, though a copy of the array came with the reply."""
    import warnings

    def loop(cp):
        x = cp.zeros(8)
        z = cp.ones(3, dtype=cp.complex128)
        out = []
        for i in range(STEPS):
            x = x + 1.0
            n = (x * float("nan") if i % 4 == 3 else x).max()
            c = (z * (1 + 1j)).sum()
            out.append(x.get())
            for convert, value in ((int, n), (float, c)):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        out.append(convert(value))
                    except (TypeError, ValueError) as e:
                        out.append(f"{type(e).__name__}: {e}")
                out.append([w.category.__name__ for w in caught])
            time.sleep(PAUSE)
        return out

    got, want, _figures = _run(pool, loop)
    assert [type(v) for v in got] == [type(v) for v in want]
    for a, b in zip(got, want):
        if isinstance(a, (str, list)):
            assert a == b
        else:
            assert_bitwise([a], [b])
    assert any(isinstance(v, str) and v.startswith("ValueError") for v in got)


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="long doubles are the NumPy device's alone "
                    "(CuPy has none: run 285)")
@pytest.mark.parametrize("dtype", ["longdouble", "clongdouble"])
def test_a_long_double_s_value_warns_at_the_user_s_line(pool, dtype):
    """``complex(v)`` of a long double beyond float64's range warns (an overflow in the
    cast): at the user's line, as the pool's warning is shown, not from the client's own
    conversion of a copy (the NumPy device holds long doubles; a review's, failing before)."""
    import warnings

    def loop(cp):
        x = cp.arange(8, dtype=cp.float64)
        base = cp.asarray(np.array(np.longdouble("1e400"), dtype=dtype))
        out = []
        for i in range(STEPS):
            x = x * 0.5 + 1.0
            w = x * 2
            v = base.copy()
            out.append(x.get())
            out.append(w.get())
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out.append(repr(complex(v)))
            out.append([(w.category.__name__, w.filename.rsplit("/", 1)[-1]) for w in caught])
            time.sleep(PAUSE)
        return out

    got, want, _figures = _run(pool, loop)
    strings = [v for v in got if not isinstance(v, np.ndarray)]
    assert strings == [v for v in want if not isinstance(v, np.ndarray)]


def test_a_read_no_copy_answers_is_neither_asked_for_nor_counted(pool):
    """``float`` of a complex (the pool's TypeError) beside a download: never asked for nor
    sent, and no hit counted (a review's, failing before: asked and counted every step)."""
    def loop(cp):
        x = cp.zeros(8)
        z = cp.ones(3, dtype=cp.complex128)
        out = []
        for i in range(STEPS):
            x = x + 1.0
            w = x * 2
            c = (z * (1 + 1j)).sum()
            out.append(x.get())
            out.append(w.get())
            try:
                out.append(float(c))
            except TypeError as e:
                out.append(str(e))
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert got[2::3] == want[2::3]
    assert_bitwise([v for i, v in enumerate(got) if i % 3 != 2],
                   [v for i, v in enumerate(want) if i % 3 != 2])
    assert figures["hits"] <= STEPS and figures["prefetched"] <= STEPS, figures


def test_a_value_read_twice_is_answered_twice(pool):
    """``if k: n = int(k)`` beside a download: both reads of ``k`` answered from the one
    copy, which nothing hands to the user."""
    def loop(cp):
        x = cp.arange(12, dtype=cp.float64)
        out = []
        for i in range(STEPS):
            x = x * 0.5 + 1.0
            t = x[::2] * 2
            k = (x > 1.5 - i).sum()   # (never 0: both reads made)
            out.append(x.get())
            out.append(t.get())
            out.append(int(k) if k else -1)
            time.sleep(PAUSE)
        return out

    got, want, figures = _run(pool, loop)
    assert_bitwise(got, want)
    assert figures["hits"] >= 3 * ANSWERED and figures["wasted"] == 0, figures
