"""The client's half of stretch replay: key each stretch of ops between two sync points,
offer what repeats, send a held stretch as a replay entry instead of its ops
(docs/graph-replay.md, steps 1 and 3).

The session adds each op and free record it queues to the stretch's
:class:`~kernelproxy.stretch_key.StretchKey`; a sync point ends the stretch. A stretch
sent whole in one batch can be replayed or offered; one whose ops went early in several
batches (the session sends ops while the worker is idle) is only counted. Once the
stretch just ended has been seen twice, the session *holds* the next one's ops to its
sync point, so that a loop's body travels whole: at its third sighting it is offered with
the batch (``O``), held from the reply that says so (``h``), and from then on travels as
``T`` (the stretch's id, the first op's number, the new inputs' handles, the scalar
parameters, the results' handles) and none of its records. Each op keeps its number and
its line, so errors read as they do today.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from gpu_backend.protocol.stretches import MAX_HELD, MAX_STRETCH_OPS, REPEATS

from .stretch_key import StretchKey

__all__ = ["StretchReplay"]

#: Keys counted at most; past it the counts start again (a program that never repeats).
MAX_COUNTED = 4096
#: Offers the worker may refuse before this session stops offering (a worker with
#: ``GPUWB_GRAPHS=0`` refuses them all).
MAX_REFUSED = 32
#: Sightings after which the next stretch is held to its sync point.
HOLD_AFTER = 2
#: A refused stretch's count: it is never offered again.
_NEVER = -(1 << 30)


class StretchReplay:
    def __init__(self, handle_of: Callable[[Any], int | None]) -> None:
        self._handle_of = handle_of
        #: the key of the stretch being queued
        self.current = StretchKey(handle_of)
        self._split = False
        #: whether the session keeps this stretch's ops to its sync point (no early batches)
        self.holding = False
        self._seen: dict[tuple, int] = {}
        self._held: dict[tuple, int] = {}
        self._offered: dict[int, tuple[int, tuple]] = {}   # batch -> (stretch id, key)
        self._ids = itertools.count(1)
        self._refused = 0
        self._replaying: set[int] = set()   # batches sent as replays, not answered yet
        #: replays answered: all of them, and those not run through graphs (from their
        #: records where a guard failed or the stretch has no graph; skipped after an error)
        self.replays = 0
        self.not_graphed = 0

    # ------------------------------------------------------------ queueing
    # (the session adds each op and free record to ``current`` itself: one call an op)
    def spoil(self) -> None:
        """The queued stretch lost records its key has (an interrupt dropped its ops)."""
        self.current.keyable = False

    def split(self) -> None:
        """Some of the stretch's ops went in a batch before its end: it cannot be replayed."""
        self._split = True

    def swap(self) -> StretchKey:
        """The stretch's key, handed over at its sync point; a new stretch begins."""
        old, self.current = self.current, StretchKey(self._handle_of)
        old.whole = not self._split
        self._split = False
        return old

    def ended_sent(self) -> None:
        """A sync point found nothing queued: the stretch ends with its ops all sent early
        (counted, never replayed)."""
        if self.current.records:
            self._split = True
            self.shape({}, self.swap(), 0)

    # ------------------------------------------------------------ sending
    def shape(self, header: dict, stretch: StretchKey, first: int) -> bool:
        """At a sync point, mark the batch's *header*: a replay of a held stretch (True: its
        records need not travel) or an offer; False where the records travel."""
        self.holding = False
        if not stretch.keyable or not stretch.ops or len(stretch) > MAX_STRETCH_OPS:
            return False   # (a batch of frees alone is not worth a stretch)
        key = stretch.key()
        try:
            sid = self._held.get(key)
        except TypeError:   # a value no key holds (a malformed op the pool will refuse)
            return False
        if sid is not None:
            self.holding = True
            if not stretch.whole:
                return False
            header["T"] = [sid, first, stretch.inputs, stretch.params, stretch.outs]
            self._replaying.add(header["b"])
            return True
        seen = self._seen.get(key, 0) + 1
        if len(self._seen) >= MAX_COUNTED:
            self._seen.clear()
        self._seen[key] = seen
        self.holding = seen >= HOLD_AFTER and self._refused < MAX_REFUSED
        if (stretch.whole and REPEATS <= seen and self._refused < MAX_REFUSED
                and len(self._held) + len(self._offered) < MAX_HELD
                and key not in self._offered_keys()):
            sid = next(self._ids)
            header["O"] = sid
            self._offered[header["b"]] = (sid, key)
        return False

    def _offered_keys(self) -> list:
        return [key for _sid, key in self._offered.values()]

    def figures(self) -> dict:
        """What this client's replay did (``%gpu status``): stretches the worker holds,
        replays answered, those of them not run through graphs, offers refused."""
        return {"held": len(self._held), "replays": self.replays,
                "not_graphed": self.not_graphed, "refused": self._refused}

    def answered(self, batch: int, held: Any, not_graphed: Any = None) -> None:
        """A batch's reply came; *held* is the stretch id the worker kept, if any;
        *not_graphed* (the reply's ``f``): a replay that did not run through graphs."""
        if batch in self._replaying:
            self._replaying.discard(batch)
            self.replays += 1
            self.not_graphed += not_graphed == 1
            return
        offer = self._offered.pop(batch, None)
        if offer is None:
            return
        if held == offer[0]:
            self._held[offer[1]] = offer[0]
        else:   # (an op failed, or the worker keeps no more): not offered again
            self._refused += 1
            self._seen[offer[1]] = _NEVER
