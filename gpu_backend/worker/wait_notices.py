"""What a batch waits for before its ops run, told to its client as it waits (issue 52).

A batch of a swapped-out session waits for its arrays to come back (0.4 s for 10 GiB from
host memory, 2-3 s from the swap file), and an allocation that found the device full waits
for the pool to swap other sessions out (up to its ``roomed``, 30 s at most). Without a
word the notebook would sit at its op with nothing to show why: the worker tells the client
(protocol ``WaitNotice``, docs/protocol.md) when such a wait starts, what it waits for and
how many bytes, then the bytes come back so far, at most every :data:`INTERVAL` seconds,
and when it ends. The client's progress factory shows them (in a notebook only a wait
longer than a second shows, as a transfer's progress does).

Only to a batch whose header says its client reads them (``p``): an older client, which
would take a notice for its batch's reply, never gets one, and a client without a display
(plain Python) asks for none. A notice that cannot be sent is dropped: the reply that
follows says all that matters, and the wait is never longer for it.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import zmq

from ..protocol.codec import packb
from ..protocol.messages import WAIT_NOTICE_VERSION

__all__ = ["WaitNotices", "INTERVAL"]

#: seconds between two notices of one wait's progress (its first and last always go)
INTERVAL = 0.25


class WaitNotices:
    """The notices of the batch being served: :meth:`batch` says to whom (or to nobody),
    then :meth:`start`, :meth:`progress` and :meth:`end` per wait; :meth:`finish` at the
    batch's end ends any wait still open."""

    def __init__(self, send: Callable[[Any, list], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self._clock = clock
        self._to: tuple[Any, int] | None = None   # (the client, its batch), or nobody
        #: each open wait: what it waits for -> [total, done, when last told]
        self._open: dict[str, list] = {}
        self.sent = 0

    def batch(self, ident: Any, batch: int, wanted: bool) -> None:
        """The batch now served: *ident*'s number *batch*; *wanted*: its header asked (``p``)."""
        self._to = (ident, batch) if wanted else None
        self._open.clear()

    def start(self, what: str, total: int) -> None:
        """A wait begins: for *what* (``swap_in``, ``room``), *total* bytes."""
        if self._to is None:
            return
        self._open[what] = [max(0, int(total)), 0, self._clock()]
        self._tell(what, 0, max(0, int(total)), False)

    def progress(self, what: str, done: int) -> None:
        """*done* bytes of the wait for *what* are back: told if INTERVAL has passed."""
        wait = self._open.get(what)
        if wait is None:
            return
        wait[1] = done = max(0, int(done))
        now = self._clock()
        if now - wait[2] >= INTERVAL:
            wait[2] = now
            self._tell(what, done, wait[0], False)

    def end(self, what: str, done: int | None = None) -> None:
        """The wait for *what* is over (*done*: its bytes, if not the last told)."""
        wait = self._open.pop(what, None)
        if wait is None:
            return
        self._tell(what, wait[1] if done is None else max(0, int(done)), wait[0], True)

    def finish(self) -> None:
        """The batch is answered (or failed): every wait still open ends, nobody is told more."""
        for what in list(self._open):
            self.end(what)
        self._to = None

    def _tell(self, what: str, done: int, total: int, end: bool) -> None:
        ident, batch = self._to
        try:
            self._send(ident, [packb({"notice": WAIT_NOTICE_VERSION, "b": batch, "w": what,
                                      "done": done, "total": total,
                                      **({"end": 1} if end else {})})])
            self.sent += 1
        except (zmq.ZMQError, OSError):   # (the reply will fail the same way, and say so)
            pass
