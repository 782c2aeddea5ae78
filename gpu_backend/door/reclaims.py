"""Requests waiting for memory that a user's other sessions hold and do not use.

Under a user's memory quota each session holds a grant that grows as it allocates and
shrinks when it is idle. A hello, or an allocation of one session, can fall short while
another session of the same user holds memory it no longer uses (its grant grew to the
whole quota, then it freed half). Then the front door asks those sessions' workers to hand
back what they do not use (``reclaim``; an idle worker answers at once, a busy one when its
batch ends) and the request waits here for their answers, at most ``RECLAIM_WAIT``; then it
is tried again, and answered either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container
from dataclasses import dataclass

__all__ = ["RECLAIM_WAIT", "Reclaim", "Reclaims"]

#: How long a request waits for the workers asked to hand memory back (seconds).
RECLAIM_WAIT = 2.0


@dataclass
class Reclaim:
    """A request waiting for the workers *waiting* (by id) until *until*: then *retry* runs it
    again; if that raises, the client *ident* (a hello's) gets the error."""
    until: float
    waiting: set[str]
    retry: Callable[[], None]
    ident: bytes | None = None


class Reclaims:
    """The waiting requests, in the order they came (the front door's loop only)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._waiting: list[Reclaim] = []

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def wait(self, asked: set[str], retry: Callable[[], None], ident: bytes | None = None,
             seconds: float = RECLAIM_WAIT) -> None:
        self._waiting.append(Reclaim(self.clock() + seconds, set(asked), retry, ident))

    def due(self, answered: str | None, live: Container[str]) -> list[Reclaim]:
        """The requests to try again now (taken out): every worker they wait for has answered
        (*answered* just did) or ended (is not in *live*), or their wait is over."""
        now, ready = self.clock(), []
        for reclaim in list(self._waiting):
            reclaim.waiting.discard(answered)
            reclaim.waiting = {w for w in reclaim.waiting if w in live}
            if not reclaim.waiting or now >= reclaim.until:
                self._waiting.remove(reclaim)
                ready.append(reclaim)
        return ready
