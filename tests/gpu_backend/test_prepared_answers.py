"""A lone loop's next answer made before its replay comes (worker/prepared_answer.py): the
worker predicts the next replay's message from the last two (its numbers step), and sends
the reply it built from the replay run ahead as soon as a message is that prediction byte
for byte; the message is then served as ever and its own reply compared with what went.

On the pool (``share``, NumPy device, real workers and sockets): loops of several shapes —
the hot sync, a kept result whose metadata the client reads, frees in the stretch's
course, a scalar that steps and one that jumps, a message of another kind now and then, a
read that fails at every fifth step — give what the same loop gives without replay,
bitwise, and no prepared reply ever differed from its message's own."""

from __future__ import annotations

import time

import msgpack
import numpy as np
import pytest

from gpu_backend.protocol import codec
from gpu_backend.worker.prepared_answer import PreparedAnswers, _Prepared, predict, read_message
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
PAUSE = 0.001   # the user's own Python between iterations: the worker prepares meanwhile


def _message(b: int, first: int, outs: list, frees: list, scalar=1) -> bytes:
    header = {"k": b"k" * 32, "b": b, "n": 3, "r": None, "T": [1, first, [0, 1], [scalar], outs, []],
              "F": [first - 2]}
    return codec.packb(header) + b"".join(codec.packb(h) for h in frees)


# ---------------------------------------------------------------- the prediction itself
def test_numbers_that_step_predict_the_next_message_byte_for_byte():
    before = _message(61, 182, [182, 183], [170])
    last = _message(62, 185, [185, 186], [173])
    assert predict(before, last) == _message(63, 188, [188, 189], [176])
    header, frees = read_message(predict(before, last))
    assert header["b"] == 63 and header["T"][4] == [188, 189] and frees == [176]


def test_a_number_that_grows_a_byte_or_a_float_that_steps_predicts_a_message_that_never_comes():
    # 127 -> fixint, 130 -> uint8: a different length, no prediction at all
    assert predict(_message(61, 120, [120, 121], []), _message(62, 125, [125, 126], [])) \
        != _message(63, 130, [130, 131], [])
    assert predict(_message(1, 9, [9, 10], []), _message(2, 12, [12, 13], [])) is not None
    assert predict(b"\x01\x02", b"\x01\x02\x03") is None          # (lengths differ)
    assert predict(b"\x05", b"\x01") is None                       # (below zero)
    stepped = predict(_message(1, 9, [9, 10], [], 0.5), _message(2, 12, [12, 13], [], 1.0))
    assert stepped != _message(3, 15, [15, 16], [], 1.5)          # (a float's bytes do not step)


def test_a_predicted_message_is_read_as_the_worker_reads_one():
    assert read_message(codec.packb({"b": 1}) + codec.packb(5) + codec.packb(300)) == ({"b": 1}, [5, 300])
    assert read_message(codec.packb({"b": 1}) + codec.packb([1, 2])) is None    # (not a free)
    assert read_message(b"\xc1") is None                                         # (malformed)
    assert read_message(b"") is None


def test_a_prepared_reply_that_differs_from_its_messages_own_turns_them_off(capsys):
    """The safety net: the message's own reply is compared with what was sent (a NaN
    equals itself there: the packed bytes are compared where the maps are not equal)."""
    answers = PreparedAnswers(None)
    nan = {"b": 3, "v": [[5, float("nan")]]}
    answers._sent = _Prepared(b"", (None, None), None, nan, codec.packb(nan))
    answers.check({"b": 3, "v": [[5, float("nan")]]})
    assert answers.mismatched == 0 and answers.enabled
    sent = {"b": 3, "v": [[5, 1.0]]}
    answers._sent = _Prepared(b"", (None, None), None, sent, codec.packb(sent))
    answers.check({"b": 3, "v": [[5, 2.0]]})
    assert answers.mismatched == 1 and not answers.enabled
    assert "differed" in capsys.readouterr().err
    answers.served({"k": b"", "T": [1]}, b"x")   # (off: nothing kept, nothing prepared)
    assert answers.ready is None and answers._last is None


# ---------------------------------------------------------------- loops on a pool
@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", read_now=True) as p:
        yield p


def _hot(cp):
    x = cp.arange(1000, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        out.append(float((x + 1).sum()))
        time.sleep(PAUSE)
    return out


def _kept(cp):
    """A carried result, a stepping int scalar, the client's frees in the stretch's course;
    the result's shape, dtype and strides (the reply's metadata) read as the loop goes."""
    x = cp.arange(1000, dtype=cp.float32) / 3
    sums, layouts = [], set()
    for step in range(STEPS):
        y = x * 2 + step
        sums.append(float(y.sum()))
        layouts.add((y.shape, y.dtype.str, y.strides, y.flags.c_contiguous))
        x = y / 3
        time.sleep(PAUSE)
    assert layouts == {((1000,), "<f4", (4,), True)}
    return sums, x.get()


def _jumping(cp):
    """A scalar that jumps (no step a prediction follows), and now and then an op of
    another kind between two iterations."""
    x = cp.linspace(0, 1, 500, dtype=cp.float64)
    out = []
    for step in range(STEPS):
        out.append(float((x * [0.5, 3.0, -0.0, 7.25][step % 4] + 1).sum()))
        if step % 7 == 3:
            out.append(float(cp.max(x)))
        time.sleep(PAUSE)
    return out


@pytest.mark.parametrize("loop", [_hot, _kept, _jumping])
@pytest.mark.parametrize("early", [True, False])
def test_loops_answered_from_prepared_replies_are_bitwise(pool, loop, early):
    got, want, figures = beside_no_replay(pool, loop, early_replay=early)
    assert_bitwise(got, want)
    assert figures["prepared_mismatched"] == 0, figures
    if loop is not _jumping:
        # (most of a steady loop's replays: the first ones teach, and a handle that grows
        # a byte on the wire costs one)
        assert figures["prepared"] >= STEPS // 2, figures


def test_a_read_that_fails_is_never_answered_from_a_prepared_reply(pool):
    """``int`` of an infinity fails at every fifth step, in the worker: a run ahead whose
    read failed leaves it for the client's replay, so no reply is prepared for it, and the
    error comes at the same steps as without replay."""
    def overflowing(cp):
        y = cp.zeros(1, dtype=cp.float64)
        big = cp.full(1, cp.inf)
        out = []
        for _ in range(STEPS):
            y = (y + 1.0) % 5.0
            try:
                out.append(int((big ** ((y > 3.0) * 1.0) + y).sum()))
            except OverflowError as exc:
                out.append(type(exc).__name__)
            time.sleep(PAUSE)
        return out, float((y + 1).sum())

    got, want, figures = beside_no_replay(pool, overflowing)
    assert got == want and got[0] == [2, 3, 4, "OverflowError", 1] * 8
    assert figures["prepared_mismatched"] == 0 and figures["prepared"] >= 1, figures


def test_prepared_answers_off_answers_every_replay_as_it_comes():
    with pool_running_ahead("share", read_now=True, GPUWB_PREPARED_ANSWERS="0") as off:
        got, want, figures = beside_no_replay(off, _hot)
    assert_bitwise(got, want)
    assert figures["prepared"] == 0 and figures["ahead"] >= 1, figures
