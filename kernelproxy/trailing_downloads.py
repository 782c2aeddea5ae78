"""The arrays a loop downloads right after a replayed stretch, sent with that stretch's reply
(issue 50; docs/stretch-replay.md, "Downloads that follow a replay").

A loop that keeps what each step made, ``out.append((z.get(), w.get(), q.get()))``, closes
its step's stretch with ``z.get()``; ``w.get()`` and ``q.get()`` come after that sync
point, each a message and a round trip of its own, though the worker had ``w`` and ``q``
ready when it answered the stretch. The client learns which of a held stretch's results
(by their slot in its template) are downloaded right after its replay, before any other
op; from the next replay on, its header asks for them (``G``, their handles), and the
worker sends them with its reply as a download op would (gpu_backend/worker/transfers.py
``prefetch_downloads``). ``w.get()`` then takes its copy without a message, but only while
no op has been issued since that replay's ops: any op (an in-place write, an upload; a
free is none) could change the array, so any op ends what the reply brought. A loop that
stops downloading one of them wastes one download, and from then on that stretch's
replays ask only for what two in a row downloaded. What was not sent (too large, the reply
failed, the worker left it out) is downloaded as ever.

Called with the session's lock held.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrailingDownloads", "PREFETCH_BYTES", "PREFETCH_MOST"]

#: The largest array sent before it is asked for: above it a download's own time is most of
#: its cost, and a wrong guess would cost as much again
PREFETCH_BYTES = 1 << 20
#: Arrays a replay asks for at most (the worker takes 16: transfers.PREFETCH_MOST)
PREFETCH_MOST = 8


class _Trail:
    """What followed one replay: its template, its results' handles (by slot), its batch,
    the op number it ended at (None until its sync point: an early replay's), and the slots
    downloaded since, in order."""

    __slots__ = ("template", "results", "batch", "seq", "slots", "asked")

    def __init__(self, template: Any, results: list, batch: int, seq: int | None,
                 asked: tuple) -> None:
        self.template = template
        self.results = results
        self.batch = batch
        self.seq = seq
        self.slots: list[int] = []
        self.asked = asked


class TrailingDownloads:
    """The session's learning of each held stretch's trailing downloads, and the copies the
    last replay's reply brought (the module's doc)."""

    __slots__ = ("on", "trail", "ready", "asked", "hits", "wasted")

    def __init__(self, on: bool = True) -> None:
        self.on = on
        self.trail: _Trail | None = None
        #: handle -> the host array the trail's reply brought for it
        self.ready: dict[int, Any] = {}
        self.asked = 0    # arrays asked for with replays
        self.hits = 0     # downloads answered by them
        self.wasted = 0   # arrays sent that no download took

    # ------------------------------------------------------------ a replay goes
    def ask(self, template: Any, results: list) -> list[int] | None:
        """The handles a replay of *template* (its results' handles *results*, by slot) asks
        the worker to download with its reply (header ``G``), or None. What followed the
        last replay is learnt first: it may be this stretch's, seen for the second time."""
        self._learn()
        if not self.on:
            return None
        plan = template.trailing
        if not plan or plan[1] is None:
            return None
        drops = template.drop_slots
        asked = [results[slot] for slot in plan[1]
                 if slot < len(results) and slot not in drops]
        return asked or None

    def sent(self, template: Any, results: list, batch: int, seq: int | None,
             asked: list | None) -> None:
        """A replay of *template* went as *batch* (*seq*: its sync point's op number; None
        for an early replay, whose run has not reached it: :meth:`settled`), having asked
        for *asked* (:meth:`ask`, just before): its trail begins."""
        if asked:
            self.asked += len(asked)
        self.trail = _Trail(template, results, batch, seq, tuple(asked or ()))

    def settled(self, batch: int, seq: int) -> None:
        """The early replay sent as *batch* answers its run, whose sync point is op *seq*."""
        trail = self.trail
        if trail is not None and trail.batch == batch:
            trail.seq = seq

    def arrived(self, batch: int, handle: int, host: Any) -> None:
        """The reply of *batch* brought *handle*'s copy (a download entry under ``-handle``)."""
        trail = self.trail
        if trail is not None and trail.batch == batch:
            self.ready[handle] = host

    # ------------------------------------------------------------ a download is asked for
    def take(self, handle: int, seq: int, nbytes: int) -> Any:
        """A download of *handle* (of *nbytes*, -1 where unknown) with the session at op *seq*: the copy the
        last replay's reply brought, if it is still the array's (no op since), else None;
        either way, learnt as following that replay where it is one of its results."""
        trail = self.trail
        if trail is None or trail.seq != seq:
            if self.ready and trail is not None and trail.seq is not None:
                self.wasted += len(self.ready)   # (an op came first: they are no longer
                self.ready.clear()               # the arrays')
            return None
        try:
            slot = trail.results.index(handle)
        except ValueError:
            return None
        if 0 <= nbytes <= PREFETCH_BYTES and len(trail.slots) < PREFETCH_MOST:
            trail.slots.append(slot)
        host = self.ready.pop(handle, None)
        if host is not None:
            self.hits += 1
        return host

    def downloaded(self, seq_before: int, seq_after: int) -> None:
        """A download not answered here went as the one op from *seq_before* to
        *seq_after*: the trail goes on past it (a later download still follows the replay)."""
        trail = self.trail
        if trail is not None and trail.seq == seq_before:
            trail.seq = seq_after

    # ------------------------------------------------------------ learning
    def _learn(self) -> None:
        """The last trail is over: its template's plan, ``(last slots seen, slots asked for
        next, whether an array asked for was ever left untaken)``, asks for what the last
        replay's trail downloaded — from its first sighting until one is left untaken, then
        only what two replays in a row downloaded (a loop that downloads at some steps only
        wastes one download, not one every other step)."""
        trail, self.trail = self.trail, None
        ready, self.ready = self.ready, {}
        if ready:
            self.wasted += len(ready)
        if trail is None or trail.seq is None:
            return
        template = trail.template
        if not trail.slots and not trail.asked:   # (the commonest: nothing then, nothing now)
            plan = template.trailing
            if plan is not None and (plan[0] or plan[1]):
                template.trailing = ((), None, plan[2])
            return
        seen = tuple(dict.fromkeys(trail.slots))
        last, _asked, missed = template.trailing or ((), None, False)
        if trail.asked and not missed:
            taken = {trail.results[slot] for slot in seen}
            missed = any(hid not in taken for hid in trail.asked)
        ask = seen if seen and (seen == last or not missed) else None
        template.trailing = (seen, ask, missed)

    def figures(self) -> dict:
        """Arrays asked for with replays, the downloads they answered, and those sent for
        nothing."""
        return {"asked": self.asked, "hits": self.hits, "wasted": self.wasted}
