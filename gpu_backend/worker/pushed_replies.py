"""Replies pushed ahead: a steady loop's next reply sent before its message comes
(docs/stretch-replay.md, "Replies pushed ahead").

Why (issue 50): with the steady lane (steady_lane.py) a loop that reads a value every
iteration still waits, every iteration, for the whole round trip: the client sends its
replay, the worker answers it from the replay run ahead, then runs the next one ahead. The
client's wait holds the transport's round trip and the worker's answer; the worker's run
ahead holds its wait for the device. One iteration is the sum of them, where each side's
own work is a fraction of it (the hot sync: ~110 µs an iteration on an H200 host whose
round trip is ~30 µs and whose worker answers in ~25).

Once the lane knows the loop's next message byte for byte and its run ahead has read the
values that message asks for, the reply to that message is known too: the worker sends it
at once, pushed, with the bytes of the message it answers (``P``). The client sends its
message as ever; where the bytes it sent are those, the reply is already there (or on its
way) and it takes it without waiting for the worker. The loop then goes at the pace of the
slower side, not of the two one after the other.

Exact by construction: the pushed reply is the lane's answer to that message, made from the
same run ahead; the worker commits it (the lane's answer's effects: the results renamed to
the client's handles, the frees, the counts) when the message comes, and both ends compare
the same bytes. Any other batch: the client drops the pushed reply and waits for the worker's
own; the worker serves it as ever. A pushed message that the lane can no longer answer from
its run ahead (the session was swapped out meanwhile) is served by the generic path with its
reply held back — the client has it — unless it failed: then that reply goes, and the
client, which took the pushed one, raises its error at its next sync point (kernelproxy/
session_replies.py, "late"). A move between the push and the message: the client sends
the batch again to the new worker, which serves it as ever (kernelproxy/relink.py).

Pushed only where nothing can come between: the loop's batch numbers go on by one (the next
batch the worker reads is the one pushed for), not for an early replay (its reply waits for
the rest of the client's run), never with a warning, a poisoned session or a read not made.
``GPUWB_PUSH=0`` turns it off (a diagnostic: the benchmarks' side ``nopush``).
"""

from __future__ import annotations

import hmac
from time import perf_counter
from typing import Any, NamedTuple

from ..protocol import codec
from .result_meta import pack_metas

__all__ = ["Pushes", "PendingPush"]

_NO_METAS = pack_metas([])


class PendingPush(NamedTuple):
    """A reply pushed and not yet claimed: its batch, and the bytes its message must be."""
    batch: int
    expected: bytes


class Pushes:
    """One session's pushed replies (at most one pending) and their counts: pushed
    (``sent``), claimed and committed in the lane (``taken``), claimed and served by the
    generic path with the reply held back (``quiet``)."""

    def __init__(self) -> None:
        self.enabled = True
        self.pending: PendingPush | None = None
        self.sent = self.taken = self.quiet = 0

    def offer(self, lane: Any) -> bytes | None:
        """The reply to push for *lane*'s next message (packed, ``P`` its bytes), now
        pending; None where it may not be pushed (the module's doc)."""
        plan = lane.plan
        if not self.enabled or plan is None or plan.dbatch != 1 or plan.early \
                or plan.served > plan.steps:
            return None
        x = lane.x
        ahead = plan.ahead
        values = ahead.read_values
        if values is None or x.replay.ahead.ahead is not ahead or x.poisoned_at is not None \
                or x._warnings or x.fatal:
            return None
        first = plan.first + plan.served * plan.dfirst
        batch = lane.batch(plan)
        count = plan.count
        packed = codec.packb({
            "b": batch, "m": _NO_METAS, "v": [[first + seq, value] for seq, value in values],
            "d": [], "e": None, "w": [], "x": plan.ran,
            "s": max(0, count - plan.ran) if type(count) is int else 0,
            "t": perf_counter() - ahead.started, "P": plan.expected})
        self.pending = PendingPush(batch, plan.expected)
        self.sent += 1
        return packed

    def claimed(self, frames: list) -> PendingPush | None:
        """The pending push, taken, where *frames* are its message byte for byte (compared
        in constant time: they hold the session key); else None (it stays pending until
        another batch comes: :meth:`drop`)."""
        pending = self.pending
        if pending is None or len(frames) != 1 \
                or not hmac.compare_digest(frames[0], pending.expected):
            return None
        self.pending = None
        return pending

    def drop(self) -> None:
        """Another batch came: the pushed reply answers none (its client drops it)."""
        self.pending = None
