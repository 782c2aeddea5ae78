"""A lone loop's next answer, made before its replay comes (docs/stretch-replay.md,
"Prepared answers").

Once a replay of a held stretch is run ahead (worker/run_ahead.py) and its closing reads are
made at once, everything its answer will hold is known before the client's message comes:
the values, the results' metadata, the number of ops. What is not known is the message's
numbers — its batch, its first op, the handles the client gives its results — and a loop's
headers go on by the same steps from one iteration to the next (a replay's ``b`` by one,
``T``'s first op and result handles by the ops and arrays of an iteration, the frees of
``F`` with them: ``extrapolate``). So, after the run ahead, the worker predicts the next
replay's header from the last two, checks that the prediction is the replay run ahead
(``RunAhead.matches``), and builds its reply. When a message comes whose header is the
prediction byte for byte (its key, its frees after it: one comparison in constant time,
before anything is decoded) and nothing else about the session changed, the prepared reply
goes out at once; the message is then served as ever (the
renames, the frees, the counts), its own reply built and compared with what was sent, not
sent again (a difference would be a bug: it is counted, told on standard error, and the
session prepares no more answers).

Why: with the run ahead the worker's answer launches nothing, yet it took 47 µs of an
H100 host's worker from the message to its reply (run 69: receiving, decoding, the header's
checks, the entry's parse and match, the renames, building and encoding the reply), all
of it on the hot sync's path. Prepared, the path is the receive, one decode, one compare
and the send; the rest moves after the reply, while the client works.

Only a session alone on the device (``Pacer.in_company`` false: no batch of the pacer's
either way) whose run ahead wrote nothing into the client's arrays and left no reads for
later; never for a batch with anything but a replay (no records, no payload, no notices,
no device time asked for, no undo, no stretches let go).
"""

from __future__ import annotations

import hmac
import math
import sys
from typing import Any

import msgpack

from ..protocol import codec
from .result_meta import add_metas, pack_metas
from .run_ahead import PROVISIONAL

__all__ = ["PreparedAnswers", "predict", "read_message", "REPLAY_KEYS"]

#: the header keys a replay answered from a prepared reply may have: the session key, the
#: batch, its op count, the resume mark, the replay entry, early, the frees before it
REPLAY_KEYS = frozenset(("k", "b", "n", "r", "T", "S", "F"))
#: a reply of eight keys (b, m, v, d, e, w, x, s) is a msgpack fixmap of eight: with ``t``
#: added as it is sent, of nine
_MAP8, _MAP9 = b"\x88", b"\x89"


def predict(before: bytes, last: bytes) -> bytes | None:
    """The next message of a loop whose last two were *before* and *last*, where every
    number in them goes on by the same step: the two read as big-endian integers, the next
    is ``last + (last - before)``. Exact wherever each number keeps its width on the wire
    (msgpack writes an int in the fewest bytes, big-endian, so a field that steps by d
    adds d times its place); anything else (a number that grows a byte, a float that
    steps, a field that changes otherwise) predicts a message that will not come: one
    compare lost, nothing else. None where the two differ in length."""
    if len(before) != len(last):
        return None
    size = len(last)
    value = 2 * int.from_bytes(last, "big") - int.from_bytes(before, "big")
    if value < 0 or value.bit_length() > 8 * size:
        return None
    return value.to_bytes(size, "big")


def read_message(message: bytes) -> tuple[Any, list] | None:
    """A predicted message read as the worker reads one: its header and the records after
    it, where they are frees alone (a replay's: the arrays the client let go in the
    stretch's course); else None."""
    rest: Any = message
    objects: list = []
    while rest:
        try:
            objects.append(msgpack.unpackb(rest, **codec.UNPACK_OPTIONS))
            rest = b""
        except msgpack.ExtraData as more:   # (the header, then each record)
            objects.append(more.unpacked)
            rest = more.extra
        except Exception:
            return None
        if len(objects) > 1 and type(objects[-1]) is not int:
            return None
    return (objects[0], objects[1:]) if objects else None


class _Prepared:
    """The message predicted (its bytes), its parsed entry, the run ahead it answers, and
    the reply (as a map, and packed less ``t``)."""

    __slots__ = ("message", "entry", "ahead", "reply", "packed")

    def __init__(self, message: bytes, entry: tuple, ahead: Any, reply: dict, packed: bytes) -> None:
        self.message, self.entry, self.ahead, self.reply, self.packed = \
            message, entry, ahead, reply, packed


class PreparedAnswers:
    """One session's prepared answer (at most one) for its executor *x*; the counts of
    replies sent prepared (``sent``), of predictions the next message was not
    (``missed``), and of prepared replies that differed from the message's own reply
    (``mismatched``: a bug; none is prepared after one)."""

    def __init__(self, x: Any) -> None:
        self.x = x
        #: ``GPUWB_PREPARED_ANSWERS=0`` turns them off (a diagnostic: benchmarks' side)
        self.enabled = True
        self.ready: _Prepared | None = None
        #: the first frames of the last two replays served in a row
        self._before: bytes | None = None
        self._last: bytes | None = None
        self.sent = self.missed = self.mismatched = 0
        #: the prepared answer sent for the message being served (check, parsed)
        self._sent: _Prepared | None = None

    # ------------------------------------------------------------ after a reply
    def served(self, header: Any = None, body: Any = b"") -> None:
        """After the reply to a batch whose header was *header* (None: no batch, a malformed
        one, or one that failed) and whose first frame was *body*: kept where it was a
        replay, and the next one prepared if it may be."""
        self.ready = None
        if type(header) is not dict or "T" not in header or not self.enabled:
            self._before = self._last = None
            return
        self._before, self._last = self._last, bytes(body)   # (its buffer is the link's)
        # (the client's next message here already, the worker is the loop's slower side:
        # it is served as it is, and nothing is spent on a prediction it no longer needs)
        if self._before is not None and not self.x.more_work():
            try:
                self._prepare()
            except Exception:   # (a prediction that reads or packs badly: none prepared)
                self.ready = None

    def _prepare(self) -> None:
        x = self.x
        replay = x.replay
        ahead = replay.ahead.ahead
        if ahead is None or ahead.reads is not None or ahead.writes or x.pacer.in_company() \
                or x.poisoned_at is not None or x._warnings:
            return
        message = predict(self._before, self._last)
        read = read_message(message) if message is not None else None
        if read is None:
            return
        header, freed = read
        if type(header) is not dict or not header.keys() <= REPLAY_KEYS:
            return
        raw, count = header.get("T"), header.get("n")
        if type(count) is not int or type(raw) is not list or not raw or raw[0] != ahead.sid:
            return
        stretch, entry = replay.stretches.entry(raw, header.get("S") == 1)
        if not replay.ahead.matches(entry):
            return
        arrays = x.table.arrays
        outs = entry.outs
        frees_first = header.get("F")
        if frees_first is not None and (type(frees_first) is not list
                                        or any(type(h) is not int for h in frees_first)):
            return
        if len(set(outs)) != len(outs) or any(hid in arrays for hid in outs) \
                or not set(outs).isdisjoint(frees_first or ()):
            return
        # the reply RunAhead.answer and Executor.run_batch would build: the kept results'
        # metadata where the client wants them and still holds them after the records' frees
        # (results.finish comes after those), the values numbered from the entry's first op
        need = entry.need
        fresh = {}
        for n, hid in enumerate(outs):
            array = arrays.get(PROVISIONAL + n)
            if array is not None and (need is None or n in need):
                fresh[hid] = array
        alive = {hid: array for hid, array in fresh.items() if hid not in freed}
        metas: list = []
        add_metas(metas, fresh, alive)
        first = entry.first
        values = [[first + seq, value] for seq, value in ahead.results.values]
        if ahead.read_values is not None:
            values.extend([first + seq, value] for seq, value in ahead.read_values)
        reply = {"b": header.get("b"), "m": pack_metas(metas), "v": values, "d": [], "e": None,
                 "w": [], "x": ahead.ran, "s": max(0, count - ahead.ran)}
        packed = codec.packb(reply)   # (a value the codec cannot send: raises, none prepared)
        if packed[:1] != _MAP8:
            return
        self.ready = _Prepared(message, (stretch, entry), ahead, reply, packed)

    # ------------------------------------------------------------ a message came
    def take(self, frames: list, cancelled: bool) -> bool:
        """Whether the message of *frames* (its key checked already) is the one predicted,
        byte for byte, and the session as it was then (*cancelled*: the batch is
        cancelled): its prepared reply may go (:meth:`reply`). The message is then served
        as ever, and :meth:`check` compares its own reply."""
        ready, self.ready = self.ready, None
        self._sent = None
        if ready is None:
            return False
        if len(frames) != 1 or not hmac.compare_digest(memoryview(frames[0]), ready.message):
            self.missed += 1
            return False
        x = self.x
        if cancelled or x.fatal or x.poisoned_at is not None or x._warnings \
                or x.replay.ahead.ahead is not ready.ahead or x.pacer.in_company():
            return False
        self.sent += 1
        self._sent = ready
        return True

    def reply(self, seconds: float) -> bytes:
        """The prepared reply taken, packed, its ``t`` (the worker's time for it) *seconds*."""
        return _MAP9 + self._sent.packed[1:] + codec.packb("t") + codec.packb(seconds)

    def parsed(self) -> tuple | None:
        """The (stretch, entry) of the message whose prepared reply was sent (None: none):
        the executor's ``answered``, read already."""
        return None if self._sent is None else self._sent.entry

    def check(self, reply: dict) -> None:
        """The message whose prepared reply was sent has been served: its own *reply* (before
        its ``t``) must be what was sent. A difference is a bug: counted, told once on standard
        error, and this session prepares no more answers."""
        sent, self._sent = self._sent, None
        if sent is None:
            return
        own = reply
        if own == sent.reply or codec.packb(own) == sent.packed:   # (bytes: a NaN is itself)
            return
        self.mismatched += 1
        self.enabled = False
        print(f"gpuwb worker: a prepared answer differed from the replay's own reply "
              f"(sent {sent.reply!r}, own {own!r}); prepared answers are off for this session",
              file=sys.stderr)
