"""The arrays a loop downloads right after a replayed stretch, sent with that stretch's reply
(issue 50; docs/stretch-replay.md, "Downloads that follow a replay").

A loop that keeps what each step made, ``out.append((z.get(), w.get(), q.get()))``, closes
its step's stretch with ``z.get()``; ``w.get()`` and ``q.get()`` come after that sync
point, each a message and a round trip of its own, though the worker had ``w`` and ``q``
ready when it answered the stretch. The client learns which arrays are downloaded right
after a held stretch's replay, before any other op, each by its place: a result or an
input of that replay, or of the last replay of another stretch of the step
(``(int(q.sum()), int(r.sum()), f.get())``: ``f`` made by the first, downloaded after the
second); from the next replay on, its header asks for them (``G``, their handles), and the
worker sends them with its reply as a download op would (gpu_backend/worker/transfers.py
``prefetch_downloads``). ``w.get()`` then takes its copy without a message, but only while
no op has been issued since that replay's ops: any op (an in-place write, an upload; a
free is none) could change the array, so any op ends what the reply brought. A loop that
stops downloading one of them wastes one download, and from then on that stretch's
replays ask only for what two in a row downloaded. What was not sent (too large, the reply
failed, the worker left it out) is downloaded as ever. A 0-d array's value read there
(``float(v)``, ``int``, ``bool``, ``complex``) is learnt and answered the same way, from
its copy, but asked for only beside a download: reads alone are the steady lane's.

Called with the session's lock held.
"""

from __future__ import annotations

from typing import Any

import math

__all__ = ["TrailingDownloads", "host_value", "answers_value", "PREFETCH_BYTES",
           "PREFETCH_MOST"]

#: the dtype kinds each value read is made of here as the pool makes it (Python's own
#: conversion of the 0-d array): ``float`` of a complex raises, ``int`` of a NaN or an
#: infinity raises, and a long double's conversions may warn (an overflow in the cast):
#: the pool says those with the user's line, so they go to the pool
_VALUE_KINDS = {"float": "biuf", "int": "biuf", "bool": "biufc", "complex": "biufc"}
_CONVERT = {"float": float, "int": int, "bool": bool, "complex": complex}


def answers_value(dtype: Any, kind: str) -> bool:
    """Whether a copy of a 0-d array of *dtype* may answer its ``float``/``int``/``bool``/
    ``complex`` (*kind*) here, as the pool would (beyond :func:`host_value`'s own check of
    the value): not a long double's, nor a kind whose conversion raises."""
    return dtype.kind in _VALUE_KINDS[kind] and dtype.char not in "gG"

#: The largest array sent before it is asked for: above it a download's own time is most of
#: its cost, and a wrong guess would cost as much again
PREFETCH_BYTES = 1 << 20
#: Arrays a replay asks for at most (the worker takes 16: transfers.PREFETCH_MOST)
PREFETCH_MOST = 8
#: Held stretches whose last replay's arrays a download is looked for among, at most (the
#: stretches a loop's step replays: a download after the step's second read may be of the
#: first's results)
RECENT_MOST = 16


def host_value(host: Any, kind: str) -> Any:
    """``float(host)`` (*kind*) of a 0-d host copy, as the pool's conversion of the array
    gives it; None where that conversion would warn or raise (the pool says those)."""
    if not answers_value(host.dtype, kind):
        return None
    if kind == "int" and host.dtype.kind == "f" and not math.isfinite(host.item()):
        return None
    return _CONVERT[kind](host)


class _Trail:
    """What followed one replay: its template, its batch, the op number it ended at (None
    until its sync point: an early replay's), what it asked for, and since then the arrays
    downloaded, each as where it came from (a place: the template of the replay that made
    it or took it, whether it was an input, its index) and as its handle."""

    __slots__ = ("template", "batch", "seq", "places", "handles", "asked")

    def __init__(self, template: Any, batch: int, seq: int | None, asked: tuple) -> None:
        self.template = template
        self.batch = batch
        self.seq = seq
        self.places: list[tuple] = []
        self.handles: list[int] = []
        self.asked = asked


def _index(handles: list, handle: int) -> int:
    """*handle*'s index in *handles*, or -1."""
    try:
        return handles.index(handle)
    except ValueError:
        return -1


class TrailingDownloads:
    """The session's learning of each held stretch's trailing downloads, and the copies the
    last replay's reply brought (the module's doc)."""

    __slots__ = ("on", "trail", "ready", "recent", "asked", "hits", "wasted")

    def __init__(self, on: bool = True) -> None:
        self.on = on
        self.trail: _Trail | None = None
        #: handle -> the host array the trail's reply brought for it
        self.ready: dict[int, Any] = {}
        #: template -> (inputs, results) of its last replay, the latest last (RECENT_MOST)
        self.recent: dict[Any, tuple] = {}
        self.asked = 0    # arrays asked for with replays
        self.hits = 0     # downloads and value reads answered by them
        self.wasted = 0   # arrays sent that no download took

    # ------------------------------------------------------------ a replay goes
    def ask(self, template: Any, inputs: list, results: list) -> list[int] | None:
        """The handles a replay of *template* (its inputs' and results' handles) asks the
        worker to download with its reply (header ``G``), or None. What followed the last
        replay is learnt first: it may be this stretch's. Arrays read as values (``float(v)``
        of a 0-d result) are asked for only beside one downloaded: a message with ``G`` is
        none the steady lane serves, and a loop whose reads alone follow its replays is
        served there, their replies pushed, better than by one message less."""
        if not self.on:   # (off: nothing learnt, nothing kept, as before it was built)
            return None
        self._learn()
        plan = template.trailing
        if not plan or plan[1] is None:
            return None
        asked: list[int] = []
        recent = self.recent
        for owner, is_input, index, _value in plan[1]:
            if owner is template:
                if not is_input and index in template.drop_slots:
                    continue   # (dropped by the stretch: the worker never holds it)
                handles = inputs if is_input else results
            else:   # (another stretch's last replay: its array, if the user still holds it)
                last = recent.get(owner)
                if last is None:
                    continue
                handles = last[0] if is_input else last[1]
            if index < len(handles) and handles[index] and handles[index] not in asked:
                asked.append(handles[index])
        return asked or None

    def sent(self, template: Any, inputs: list, results: list, batch: int, seq: int | None,
             asked: list | None) -> None:
        """A replay of *template* went as *batch* (*seq*: its sync point's op number; None
        for an early replay, whose run has not reached it: :meth:`settled`), having asked
        for *asked* (:meth:`ask`, just before): its trail begins."""
        if not self.on:
            return
        if asked:
            self.asked += len(asked)
        recent = self.recent
        recent.pop(template, None)
        recent[template] = (inputs, results)
        if len(recent) > RECENT_MOST:
            del recent[next(iter(recent))]
        self.trail = _Trail(template, batch, seq, tuple(asked or ()))

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
    def take(self, handle: int, seq: int, nbytes: int, value: bool = False) -> Any:
        """A download of *handle* (of *nbytes*, -1 where unknown; *value*: a read of a 0-d
        array's value) with the session at op *seq*: the copy the last replay's reply
        brought, if it is still the array's (no op since), else None; either way, learnt as
        following that replay where it is an input or a result of it or of another recent
        replay."""
        trail = self.trail
        if trail is None or trail.seq != seq:
            if self.ready and trail is not None and trail.seq is not None:
                self._let_go(trail)   # (an op came first: they are no longer the arrays')
            return None
        if 0 <= nbytes <= PREFETCH_BYTES and len(trail.places) < PREFETCH_MOST \
                and handle not in trail.handles:   # (arrays, not downloads, counted)
            place = self._place(handle)
            if place is not None:
                trail.places.append(place + (value,))
                trail.handles.append(handle)
        if value:   # (its copy stays for the next read of its value: handed to nobody;
            return self.ready.get(handle)   # the hit is counted once the value is made)
        host = self.ready.pop(handle, None)
        if host is not None:
            self.hits += 1
        return host

    def _place(self, handle: int) -> tuple | None:
        """Where *handle* came from: a result or an input of the latest replay of a recent
        stretch, the most recent first (the trail's own, which :meth:`sent` put last);
        None: none."""
        for owner in reversed(self.recent):
            inputs, results = self.recent[owner]
            index = _index(results, handle)
            if index >= 0:
                return (owner, False, index)
            index = _index(inputs, handle)
            if index >= 0:
                return (owner, True, index)
        return None

    def dropped(self, handle: int) -> None:
        """The user dropped *handle*'s array: the copy a reply brought for it goes too
        (wasted unless a value read took it)."""
        if self.ready.pop(handle, None) is not None:
            trail = self.trail
            if trail is None or handle not in trail.handles:
                self.wasted += 1

    def _let_go(self, trail: _Trail | None) -> None:
        """The copies the replay's reply brought go: those no read took, wasted (a value
        read's copy stays while it may be read again, taken all the same)."""
        taken = trail.handles if trail is not None else ()
        self.wasted += sum(1 for hid in self.ready if hid not in taken)
        self.ready = {}

    def clear(self) -> None:
        """The session closed or was lost: nothing it learnt or was sent is kept."""
        self.trail = None
        self.ready = {}
        self.recent = {}

    def downloaded(self, seq_before: int, seq_after: int) -> None:
        """A download not answered here went as the one op from *seq_before* to
        *seq_after*: the trail goes on past it (a later download still follows the replay)."""
        trail = self.trail
        if trail is not None and trail.seq == seq_before:
            trail.seq = seq_after

    # ------------------------------------------------------------ learning
    def _learn(self) -> None:
        """The last trail is over: its template's plan, ``(last places seen, places asked
        for next, whether an array asked for was ever left untaken)``, asks for what the
        last replay's trail downloaded — from its first sighting until one is left
        untaken, then only what two replays in a row downloaded (a loop that downloads at
        some steps only wastes one download, not one every other step)."""
        trail, self.trail = self.trail, None
        if self.ready:
            self._let_go(trail)
        if trail is None or trail.seq is None:
            return
        template = trail.template
        if not trail.places and not trail.asked:   # (the commonest: nothing then, nothing now)
            plan = template.trailing
            if plan is not None and (plan[0] or plan[1]):
                template.trailing = ((), None, plan[2])
            return
        seen = tuple(trail.places)   # (one place a handle, one handle a place: take)
        last, _asked, missed = template.trailing or ((), None, False)
        if trail.asked and not missed:
            taken = set(trail.handles)
            missed = any(hid not in taken for hid in trail.asked)
        ask = seen if seen and (seen == last or not missed) \
            and not all(place[3] for place in seen) else None   # (reads alone: the lane's)
        template.trailing = (seen, ask, missed)

    def figures(self) -> dict:
        """Arrays asked for with replays, the downloads and value reads they answered, and
        those sent for nothing."""
        return {"asked": self.asked, "hits": self.hits, "wasted": self.wasted}
