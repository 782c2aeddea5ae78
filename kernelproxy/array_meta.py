"""A session's metadata of its arrays (shape, dtype, strides, flags), from the replies that
carry it until each array first asks for it.

A reply carries metadata only for the batch's new arrays that the worker still holds at
the batch's end. An array dropped after its op was sent but before the reply came is
remembered here, so that its entry is not kept when it comes: kept, such entries grew by
one per dropped array for the session's life (a ``x = x + 1`` loop, a training step's
temporaries). An array dropped while its op is still queued needs no such note: its free
record travels in the same batch, and the worker sends nothing for it.
"""

from __future__ import annotations

from gpu_backend.protocol import codec

__all__ = ["ArrayMetadata", "wire_tuple"]


class ArrayMetadata:
    def __init__(self) -> None:
        #: each array's entry as its reply carried it (``[hid, shape, dtype, strides, flags]``)
        self.entries: dict[int, list] = {}
        #: arrays dropped after their op was sent and before their entry came
        self.dropped_early: set[int] = set()
        #: every handle below this was issued before the session's last batch was sent
        self.sent_below = 0

    def arrived(self, entries: list) -> None:
        """A reply's entries: kept, but for arrays already dropped."""
        kept, dropped = self.entries, self.dropped_early
        for entry in entries:
            hid = entry[0]
            if dropped and hid in dropped:
                dropped.discard(hid)
            else:
                kept[hid] = entry

    def take(self, hid: int) -> tuple | None:
        """``(shape, dtype, strides, flags)`` of *hid*, handed over once (its array keeps it)."""
        entry = self.entries.pop(hid, None)
        return None if entry is None else wire_tuple(entry)

    def peek(self, hid: int) -> tuple | None:
        """The same without taking it (None if its reply has not come)."""
        entry = self.entries.get(hid)
        return None if entry is None else wire_tuple(entry)

    def dropped(self, hid: int, unread: bool) -> None:
        """The array *hid* was dropped; *unread*: it never took its entry, which may then be
        still to come (if its op was sent: else its free record joins its op's batch)."""
        if self.entries.pop(hid, None) is None and unread and hid < self.sent_below:
            self.dropped_early.add(hid)

    def settled(self) -> None:
        """Every batch sent is answered and nothing is queued: no entry is still to come."""
        self.dropped_early.clear()


def wire_tuple(entry: list) -> tuple:
    """A reply's metadata entry ``[hid, shape, dtype, strides, flags]`` as an array keeps it:
    ``(shape, dtype, strides, flags)``."""
    _hid, shape, dt, strides, flags = entry
    return (tuple(shape), codec.wire_dtype(dt), tuple(strides), flags)
