"""The client's half of stretch replay: key each stretch of ops between two sync points,
offer what repeats, send a held stretch as a replay entry instead of its ops
(docs/stretch-replay.md, steps 1 and 3).

The session adds each op and free record it queues to the stretch's
:class:`~kernelproxy.stretch_key.StretchKey`; a sync point ends the stretch. A stretch
sent whole in one batch can be replayed or offered; one whose ops went early in several
batches (the session sends ops while the worker is idle) is only counted. Once the
stretch just ended has been seen HOLD_AFTER times, the session *holds* the next one's ops to its
sync point, so that a loop's body travels whole: at its next sighting it is offered with
the batch (``O``), held from the reply that says so (``h``), and from then on travels as
``T`` (the stretch's id, the first op's number, the new inputs' handles, the scalar
parameters, the results' handles) and none of its records. Each op keeps its number and
its line, so errors read as they do today.

Holding a stretch has a price: its ops no longer go early, so the device no longer starts
on them while the program is still issuing the rest. Where the device's work dominates (a
k-means step on a million points), that costs more than the replay saves. So each
repeated stretch is *timed* — from the sync point before it to its own sync point's
answer — in its pipelined sightings and in its replays, and a held stretch whose replays
are not faster, or that the worker never ran through graphs (the replies' ``f``: a re-run
from its records saves the device nothing), is let go: its ops travel early again, and
the worker is told to drop it (``D``), freeing its graphs' memory (docs/stretch-replay.md,
"Measured, not assumed").

What it keeps is bounded without forgetting what it decided (:class:`StretchReplay`;
docs/stretch-replay.md, "Bounds").
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretches import MAX_HELD, REPEATS

from . import loop_cuts
from .early_replay import EarlyPlan
from .stretch_key import StretchKey
from .stretch_templates import StretchTemplate, Templates
from .template_run import TemplateRun

__all__ = ["StretchReplay"]

_OPERATOR = m.KIND_OPERATOR
#: a run's first handle before its first op has drawn it (operator_run): above every handle
#: issued, so that no array met is taken for a result of the run
_FIRST_UNKNOWN = 1 << 62

#: Undecided keys counted at most: past it the one seen least recently is forgotten (a
#: program that never repeats keeps no more; a forgotten key that comes back is counted
#: from one again). Decided keys are kept apart and never forgotten so.
MAX_COUNTED = 4096
#: Keys decided at most: refused by the worker, or let go (not faster replayed). Past it
#: the session offers no new stretch, so that no decision is forgotten (a forgotten key
#: would be offered, held and timed again, each time); the stretches it holds stay held
#: and timed (their let-go adds at most MAX_HELD more), and once it holds none it builds
#: no key at all.
MAX_DECIDED = 4096
#: Offers the worker may refuse before this session stops offering (a worker with
#: ``GPUWB_GRAPHS=0`` refuses them all).
MAX_REFUSED = 32
#: Sightings at which a piece of a loop with no sync point is offered (kernelproxy/
#: loop_cuts.py): the period its cut was found by has shown the ops repeat already.
PIECE_REPEATS = 2
#: Sightings after which the next stretch is held to its sync point (offered then): the
#: ones from the second on are timed as they run pipelined.
HOLD_AFTER = REPEATS - 1
#: Replays timed (after the first, which captures the stretch) before a held stretch is
#: kept or let go.
TIMED_REPLAYS = 8
#: Of the replays, the first ones that do not count: the capture, and two that still warm
#: up (the first answered from the template, the worker's first set up or run ahead).
#: Measured on a lone hot sync (2026-11-25, the NumPy device): replays 2-5 took 480, 325,
#: 252 and 346 µs, later ones 220-280, against 230-300 µs pipelined; judged by replays
#: 2-5, the stretch was let go though its replays were faster.
WARM_REPLAYS = 3
#: Replays in a row re-run from their records (the replies' ``f``), after some ran through
#: graphs, that make a held stretch stale: its inputs changed shape (a loop run again on
#: other sizes), which the worker's graph and the client's template no longer fit. It is
#: dropped and offered again, to be captured for the new shapes, at most MAX_REOFFERS
#: times a key (then let go, as a stretch that does not replay faster).
STALE_AFTER = 3
MAX_REOFFERS = 2
#: Shapes of held stretches dropped for a released object kept at most (:meth:`StretchReplay.
#: object_gone`), the oldest forgotten first.
MAX_GONE_SHAPES = 64
#: Sightings of a stretch let go by its timing after which it is counted, offered and timed
#: again: a judgement made while another session's work came and went on the device can be
#: wrong (an interactive user's loop, judged in its warm-up beside a neighbour starting 22 ms
#: GEMMs, was let go and answered op by op for the rest of its session: p50 2.64 ms against
#: 0.55-0.68 where it was kept, H200 run 102). Each trial judged no faster doubles the wait
#: before the next, and none is the last: with a last trial (two, until the fifty-sixth
#: session) three unlucky judgements were for good, and an interactive user beside a trainer
#: and 22 ms GEMMs was served 28 replays of its ~845 requests, p99 6.17 ms against 0.36-0.47
#: in the scenario's other passes (H200 run 326). Doubling keeps what trials cost a stretch
#: that is truly no faster to a few replays in every RETRY_AFTER × 2^n sightings.
RETRY_AFTER = 100


def _largest(metas: list) -> int:
    """The bytes of the largest of a template's inputs (their metadata, None where unknown)."""
    return max((int(np.prod(meta[0], dtype=np.int64)) * np.dtype(meta[1]).itemsize
                for meta in metas if meta is not None), default=0)


class _Sightings:
    """An undecided key's count, and the times of its pipelined sightings (the second to
    the HOLD_AFTER-th: three at most), handed to its :class:`_Timing` once it is held."""

    __slots__ = ("n", "free")

    def __init__(self) -> None:
        self.n = 0
        self.free: list[float] = []


class _Timing:
    """A held stretch's times (seconds): pipelined sightings, replays; then the choice."""

    __slots__ = ("key", "free", "held", "reruns", "rerun", "paced", "decided", "graphed", "stale",
                 "piece", "several")

    def __init__(self, key: tuple, free: list[float]) -> None:
        self.key = key
        self.free = free
        self.held: list[float] = []
        self.graphed = False   # a replay of it ran through graphs
        self.stale = 0         # replays since the last that did: re-runs from its records
        self.piece = False     # a piece of a loop with no sync point: never timed (_ends)
        self.reruns = 0        # timed replays the worker did not run through graphs
        self.rerun = False     # the last replay answered was one
        self.paced = False     # the last replay answered was re-run paced on purpose: untimed
        self.decided = False
        #: it holds a call of several results: judged by its time alone (_timed), for
        #: one of such calls alone is never graphed and may still save their messages
        self.several = False


class StretchReplay:
    """*measured* (``GPUWB_REPLAY_MEASURED``, on by default): time each held stretch and
    let go of those that replay no faster than they run pipelined (tried again after
    RETRY_AFTER more sightings, the wait doubled at each trial: what was slower beside
    another user's work may not be later); off, every repeated stretch stays held. *clock*
    is the timer (tests give one of their own).

    What it keeps is bounded, and what it decided is never forgotten for room: the counts
    of undecided keys (at most MAX_COUNTED, the least recently seen forgotten first), the
    keys decided (refused or let go: MAX_DECIDED), the held stretches and their times
    (MAX_HELD). Counts and decisions are kept by the key's hash, not the key (up to
    MAX_STRETCH_OPS records each): two keys of one hash (one chance in 2**64 a pair) could
    only make a stretch offered early or never, which costs speed, not a result — an offer
    carries its records, and held stretches are kept by the whole key.
    """

    def __init__(self, handle_of: Callable[[Any], int | None], measured: bool = True,
                 clock: Callable[[], float] = time.perf_counter, fast: bool = True,
                 early: bool = True, several: bool = True) -> None:
        self._handle_of = handle_of
        #: whether a stretch with a call of several results is keyed (``GPUWB_SEVERAL_HELD``)
        self._several = several
        self._measured = measured
        self._clock = clock
        #: the held stretches' templates, whose runs the session answers on the client
        #: (kernelproxy/stretch_templates.py); none kept with the fast path off
        #: (``GPUWB_FAST_PATH=0``)
        self.templates = Templates()
        self._fast = fast
        self._early = early   # (kernelproxy/early_replay.py; GPUWB_EARLY_REPLAY)
        self._last_start: StretchTemplate | None = None
        self._counts: OrderedDict[int, _Sightings] = OrderedDict()   # hash -> sightings (LRU)
        self._decided: set[int] = set()          # hashes of keys refused or let go
        #: keys let go by their timing (by hash): sightings since, until RETRY_AFTER; and
        #: how often each was tried again
        self._retry: dict[int, int] = {}
        self._retried: dict[int, int] = {}
        self._held: dict[tuple, int] = {}         # key -> stretch id
        #: the held stretches' times, by stretch id (not by key: a key is a tuple of every
        #: record, hashed anew at each lookup, ~30 000 instructions for chain20's 20 ops)
        self._timing: dict[int, _Timing] = {}
        #: batch -> (stretch id, key, the stretch's key object, the batch as sent)
        self._offered: dict[int, list] = {}
        self._ids = itertools.count(1)
        self._refused = 0
        self._let_go = 0
        #: held stretches gone stale (STALE_AFTER), dropped at the next stretch's start;
        #: and how often each key (by hash) was offered again so
        self._stale: list[tuple] = []
        self._reoffers: dict[int, int] = {}
        #: the held keys that call a method of each remote object (by its id, which the key
        #: holds as a literal, ``Session.new_id``'s, never reused): when the object is
        #: released, those stretches can never be replayed again (a ``RandomState`` made
        #: for each run of a cell is a new object, each run's loop a new stretch), and they
        #: are dropped at the next stretch's start (``_gone``), their graphs with them
        self._by_object: dict[int, list[tuple]] = {}
        self._gone: list[tuple] = []
        #: the keys of those stretches less their objects (``_unbound``), each with its
        #: pipelined times: a new object's loop of the same shape (the next run's
        #: ``RandomState``) is held from its first sighting, not its fourth, and judged
        #: against the times of the loop before it (``gone_shapes_met`` counts them)
        self._gone_shapes: OrderedDict[tuple, list[float]] = OrderedDict()
        self.gone_shapes_met = 0
        #: the ids of stretches let go that the worker is to drop
        self.drops: list[int] = []
        #: the stretches ended since the last sync point returned, each timed by the whole
        #: interval to the next: (what times it, how it ran), one entry a stretch
        self._ending: dict[int, tuple[Any, str]] = {}
        self._since: float | None = None              # when the last sync point returned
        #: the key of the stretch being queued
        self.current = StretchKey(handle_of, several_ok=several)
        self._split = False
        #: whether the session keeps this stretch's ops to its sync point (no early batches)
        self.holding = False
        self._replaying: dict[int, int] = {}   # batches sent as replays -> their stretch ids
        #: replays sent from a run the fast path answered (the rest went as ops first)
        self.fast_replays = 0
        #: held stretches dropped because an object whose methods they call was released
        self.gone_dropped = 0
        #: of them, replays sent early, and early replays undone (kernelproxy/early_replay.py)
        self.early_sent = 0
        self.early_undone = 0
        #: replays answered: all of them, and those not run through graphs (from their
        #: records where a guard failed or the stretch has no graph; skipped after an error)
        self.replays = 0
        self.not_graphed = 0
        #: of them, re-run paced beside others on purpose (the replies' ``f`` 2): not stale
        self.paced = 0

    # ------------------------------------------------------------ queueing
    # (the session adds each op and free record to ``current`` itself: one call an op)
    def spoil(self) -> None:
        """The queued stretch lost records its key has (an interrupt dropped its ops)."""
        self.current.keyable = False

    def sent_beside(self) -> None:
        """The queued stretch holds an upload whose data went at once, zero-copy, beside its
        records (one of ``INLINE_BYTES`` or more: kernelproxy.session.upload): never replayed,
        for a replay's frames wait for its end, and the caller may write that memory again."""
        self.current.keyable = False

    def split(self) -> None:
        """Some of the stretch's ops went in a batch before its end: it cannot be replayed,
        but its key is still built (to MAX_STRETCH_OPS records): its sightings count, so
        that a loop whose body goes early is held whole from its HOLD_AFTER-th sighting on,
        and a held stretch that went early still holds the next one."""
        self._split = True

    def swap(self) -> StretchKey:
        """The stretch's key, handed over at its sync point; a new stretch begins, keyed
        only where a key can still be used: the session may offer, or holds stretches
        (to know them when they come)."""
        usable = bool(self._held or self._offered) or self._can_offer()
        old, self.current = self.current, StretchKey(self._handle_of, keyed=usable,
                                                     several_ok=self._several)
        old.whole = not self._split
        self._split = False
        return old

    def ended_sent(self) -> None:
        """A sync point found nothing queued: the stretch ends with its ops all sent early
        (counted, never replayed)."""
        if self.current.records:
            self._split = True
            self.shape({}, self.swap(), 0)

    def cut_here(self) -> bool:
        """Whether the stretch queued so far ends at an upload (kernelproxy.session): where
        it is held, or may yet be, so that its sightings and replays end there each time;
        not where its key is let go or refused (cutting it then only costs a message)."""
        if self.holding:
            return True
        current = self.current
        if not current.keyable or not current.ops:
            return False
        try:
            return hash(current.key()) not in self._decided
        except TypeError:   # (a value no key holds: the pool refuses the op)
            return False

    # ------------------------------------------------------------ sending
    def shape(self, header: dict, stretch: StretchKey, first: int) -> bool:
        """At a sync point, mark the batch's *header*: a replay of a held stretch (True: its
        records need not travel) or an offer; False where the records travel."""
        held_ops, self.holding = self.holding, False
        if not stretch.keyable or not stretch.ops:
            return False   # (unkeyed, too long, or a batch of frees alone: not worth a stretch)
        key = stretch.key()
        try:
            sid = self._held.get(key)
            mark = hash(key)
        except TypeError:   # a value no key holds (a malformed op the pool will refuse)
            return False
        if sid is not None:
            self.holding = True
            if not stretch.whole:
                return False
            header["T"] = [sid, first, stretch.inputs, stretch.params, stretch.outs]
            self._replaying[header["b"]] = sid
            if not stretch.piece:   # (a piece is never timed: _ends)
                self._ends(self._timing[sid], "replay")
            return True
        if mark in self._decided:
            since = self._retry.get(mark)
            if since is None:
                return False
            if since + 1 < RETRY_AFTER << self._retried.get(mark, 0):
                self._retry[mark] = since + 1
                return False
            del self._retry[mark]   # (tried again: counted afresh, its pipelined times too)
            self._decided.discard(mark)
            self._counts.pop(mark, None)
            self._retried[mark] = self._retried.get(mark, 0) + 1
        count = self._counts.get(mark)
        if count is None:
            count = self._counts[mark] = _Sightings()
            if len(self._counts) > MAX_COUNTED:
                self._counts.popitem(last=False)   # the undecided key seen least recently
            if self._gone_shapes:
                self._known_shape(key, count)
        else:
            self._counts.move_to_end(mark)
        count.n += 1
        seen = count.n
        if 2 <= seen <= HOLD_AFTER and not held_ops and not stretch.piece:
            self._ends(count.free, "free")   # (the first sighting pays for compiling kernels)
        offering = self._can_offer()
        self.holding = seen >= HOLD_AFTER and offering
        if (stretch.whole and (PIECE_REPEATS if stretch.piece else REPEATS) <= seen and offering
                and len(self._held) + len(self._offered) < MAX_HELD
                and key not in self._offered_keys()):
            sid = next(self._ids)
            header["O"] = sid
            self._offered[header["b"]] = [sid, key, stretch, None]
        return False

    def offered_batch(self, batch: int, frame: bytes) -> None:
        """The batch that offers a stretch, as sent: its template is built from it."""
        offer = self._offered.get(batch)
        if offer is not None and self._fast:
            offer[3] = frame

    # ------------------------------------------------------------ the fast path
    def start_run(self, session: Any, kind: str, want: str, out: int | None, name: Any,
                  target: Any, args: tuple | list, kwargs: dict | None, label: str,
                  first: int) -> TemplateRun | None:
        """A stretch's first op: a run answered from the first template that begins so and
        takes it, or None."""
        if self._stale or self._gone:   # (a stretch's first op: no run under way)
            self.settle_stale()
        if type(name) is not str:
            return None
        candidates = self.templates.starting(kind, name)
        last = self._last_start   # (a loop's stretch: the one that began last, tried first)
        if last is not None and last in candidates and candidates[0] is not last:
            candidates = [last, *(t for t in candidates if t is not last)]
        # (the first op's result handle was chosen before the run began: it is the run's;
        # a call of several results' first piece's, the lowest of its list)
        if type(out) is list:
            first_hid = out[0] if out else session.new_id()
        else:
            first_hid = out if out is not None else session.new_id()
        for template in candidates:
            run = TemplateRun(session, self.templates, template, first, first_hid)
            if run.take(kind, want, out, name, target, args, kwargs, label, 4):
                self._last_start = template
                return run
        return None

    def operator_run(self, session: Any, name: str, first: int) -> TemplateRun | None:
        """The run that a stretch's first op, Python's operator *name* (an array operand,
        the other an array or a scalar), would start with the template :meth:`start_run`
        tries first, made for the compiled operator to check the op against (held_ops.start;
        the run's first handle is set as it takes it); None where no template begins so, or
        where one is stale (:meth:`start_run` settles those first)."""
        if self._stale or self._gone:
            return None
        candidates = self.templates.by_first.get((_OPERATOR, name))
        if not candidates:
            return None
        last = self._last_start
        template = last if last is not None and last in candidates else candidates[0]
        if template.plans[0] is None:
            return None
        return TemplateRun(session, self.templates, template, first, _FIRST_UNKNOWN)

    def started(self, run: TemplateRun) -> None:
        """The compiled operator took the first op of *run* (from :meth:`operator_run`)."""
        self._last_start = run.template

    def replayed(self, header: dict, template: StretchTemplate) -> None:
        """A run answered from *template* ends at its sync point, sent as the replay in
        *header* (its ``T`` set): timed, counted as any replay; a new stretch begins."""
        self.holding = True
        sid = template.sid
        timing = self._timing.get(sid)
        if timing is not None and not timing.piece:
            self._ends(timing, "replay")
        self._replaying[header["b"]] = sid
        self.fast_replays += 1
        self.swap()

    def unreplayed(self, batch: int) -> None:
        """The early replay sent as *batch* was undone (kernelproxy/early_replay.py): it is
        no replay of the run, which ends as another."""
        if self._replaying.pop(batch, None) is not None:
            self.fast_replays -= 1

    def _ends(self, times: Any, how: str) -> None:
        """A stretch timed by *times* ended (*how*: ``"free"``, its ops pipelined, or
        ``"replay"``): the interval to the next sync point's return is put down to it. Never
        called for a piece of a loop with no sync point (``StretchKey.piece``): its ops go at
        its cut whether replayed or not, so holding it costs no overlap, and the interval to
        the next sync point is the whole loop's, as long as the loop is (a long loop after a
        short one would be judged slower); pieces stay held."""
        self._ending[id(times)] = (times, how)

    def synced(self) -> None:
        """A sync point has returned: each stretch that ended since the one before took
        that whole interval — one stretch, or those an upload cut the loop's body into
        (docs/stretch-replay.md, "Uploads inside a loop"), judged together as the loop's
        iteration; a held stretch timed enough is kept or let go."""
        now = self._clock()
        ending, since = self._ending, self._since
        self._ending, self._since = {}, now
        if not ending or since is None or not self._measured:
            return
        for times, how in ending.values():
            self._timed(times, how, now - since)

    def _timed(self, times: Any, how: str, took: float) -> None:
        if how == "free":
            times.append(took)
            return
        timing: _Timing = times
        if timing.decided or timing.paced:
            return
        timing.held.append(took)
        timing.reruns += timing.rerun
        if len(timing.held) <= TIMED_REPLAYS:
            return
        timing.decided = True
        # let go where no replay ran through graphs (a re-run from the records saves the
        # device nothing), or where the replays were not faster; a stretch with a call of
        # several results is judged by its time alone (one of such calls alone is never
        # graphed): its re-runs save the messages and the checks of its ops
        never_graphed = timing.reruns >= len(timing.held) and not timing.several
        if never_graphed or (
                timing.free and statistics.median(timing.held[WARM_REPLAYS:]) >= statistics.median(timing.free)):
            self._let_go_of(timing.key)
            mark = hash(timing.key)
            if not never_graphed:
                self._retry[mark] = 0   # (not faster here and now: tried again later, the
                # wait doubled at each trial: RETRY_AFTER)

    def _let_go_of(self, key: tuple) -> None:
        """The held stretch *key* is let go: not held again (but, let go by its timing, after
        RETRY_AFTER sightings, doubled at each trial: :meth:`_timed`), the worker told to drop it
        (its graphs' memory with it: the next batch's header ``D``)."""
        self._drop_held(key)
        self._decided.add(hash(key))
        self._let_go += 1

    def _drop_held(self, key: tuple) -> bool:
        """The held stretch *key* dropped: its template, its timing, the worker told (the
        next batch's header ``D``, its graphs' memory with it); whether it was held."""
        sid = self._held.pop(key, None)
        if sid is None:
            return False
        self.drops.append(sid)
        self.templates.drop(sid)
        self._timing.pop(sid, None)
        return True

    def settle_stale(self) -> None:
        """Between two stretches (no run answered from a template under way): the held
        stretches gone stale are dropped (the next batch tells the worker, freeing their
        graphs) and counted anew, to be offered again with their new shapes; a key stale
        more than MAX_REOFFERS times is let go."""
        if self._gone:   # (stretches of objects released: never replayed again)
            gone, self._gone = self._gone, []
            for key in gone:
                if self._drop_held(key):
                    self.gone_dropped += 1
        if not self._stale:
            return
        stale, self._stale = self._stale, []
        for key in stale:
            if not self._drop_held(key):
                continue
            mark = hash(key)
            times = self._reoffers.get(mark, 0) + 1
            if times > MAX_REOFFERS:
                self._decided.add(mark)
                self._let_go += 1
            elif len(self._reoffers) < MAX_DECIDED:
                self._reoffers[mark] = times

    def _can_offer(self) -> bool:
        return self._refused < MAX_REFUSED and len(self._decided) < MAX_DECIDED

    def _offered_keys(self) -> list:
        return [offer[1] for offer in self._offered.values()]

    def figures(self) -> dict:
        """What this client's replay did (``%gpu status``): stretches the worker holds,
        replays answered, those of them not run through graphs, stretches let go (not
        faster replayed), offers refused, replays answered from templates, and of them those
        sent early, and early replays undone."""
        return {"held": len(self._held), "replays": self.replays,
                "not_graphed": self.not_graphed, "paced": self.paced, "released": self._let_go,
                "objects_gone": self.gone_dropped, "gone_shapes_met": self.gone_shapes_met,
                "refused": self._refused, "fast": self.fast_replays,
                "early": self.early_sent, "early_undone": self.early_undone}

    def object_gone(self, hid: int) -> None:
        """The client released *hid*, an array's or a remote object's handle: the held
        stretches that call the object's methods are dropped at the next stretch's start
        (:meth:`settle_stale`; a run answered from a template may be under way now), their
        shapes less their objects kept (:meth:`_known_shape`)."""
        keys = self._by_object.pop(hid, None)
        if keys is None:
            return
        self._gone.extend(keys)
        shapes = self._gone_shapes
        for key in keys:   # (only a stretch still held and timed: one let go, or dropped
            # already for another object it calls, says nothing of the next loop)
            timing = self._timing.get(self._held.get(key, -1))
            if timing is None:
                continue
            shape = _unbound(key)   # (never None: the key calls the object's methods)
            shapes[shape] = list(timing.free)
            shapes.move_to_end(shape)
            if len(shapes) > MAX_GONE_SHAPES:
                shapes.popitem(last=False)

    def _known_shape(self, key: tuple, count: "_Sightings") -> None:
        """A key seen for the first time that is, but for the objects whose methods it
        calls, a stretch held until its objects were released (a loop over a
        ``RandomState`` or a ``Generator`` made for each run of a cell): counted as seen
        HOLD_AFTER - 1 times, so that this sighting holds the next one's ops and that one
        is offered, with the pipelined times of the loop before (its timing's reference).
        Steps 2-4 of each run went as plain ops before, and the worker served them one by
        one (H200 run 210: ``mc_option`` 14 messages a run by the generic path)."""
        shape = _unbound(key)
        free = self._gone_shapes.get(shape) if shape is not None else None
        if free is not None:
            count.n = HOLD_AFTER - 1
            count.free = list(free)
            self.gone_shapes_met += 1

    def take_drops(self) -> list[int]:
        """The ids of stretches let go since the last batch: its header tells the worker."""
        drops, self.drops = self.drops, []
        return drops

    def answered(self, batch: int, held: Any, not_graphed: Any = None, metas: Any = None,
                 early: Any = None) -> None:
        """A batch's reply came; *held* is the stretch id the worker kept, if any, with its
        *metas* (the reply's ``hm``: its template's metadata) and whether it may be replayed
        early (*early*, the reply's ``hs``); *not_graphed* (the reply's ``f``): a replay
        that did not run through graphs: 1, its graphs did not serve it; 2, re-run paced
        beside others on purpose, its graphs fitting still (neither counted toward a stale
        stretch nor timed: a choice of the pool's sharing, not of the stretch's)."""
        sid = self._replaying.pop(batch, None)
        if sid is not None:
            self.replays += 1
            if not_graphed == 1:
                self.not_graphed += 1
            elif not_graphed == 2:
                self.paced += 1
            timing = self._timing.get(sid)   # (counted with the replay's time, in synced)
            if timing is not None:
                timing.rerun = not_graphed == 1
                timing.paced = not_graphed == 2
                if not_graphed not in (1, 2):
                    timing.graphed, timing.stale = True, 0
                elif not_graphed == 1 and timing.graphed:
                    timing.stale += 1
                    if timing.stale == STALE_AFTER:
                        self._stale.append(timing.key)
            return
        offer = self._offered.pop(batch, None)
        if offer is None:
            return
        sid, key, stretch, frame = offer
        count = self._counts.pop(hash(key), None)   # (held or refused now: no longer counted)
        if held == sid:
            self._held[key] = sid
            for hid in _object_targets(key):
                self._by_object.setdefault(hid, []).append(key)
            timing = self._timing[sid] = _Timing(key, count.free if count is not None else [])
            timing.piece = stretch.piece
            timing.several = stretch.several
            if stretch.several and not _fits_pieces(metas, stretch):
                self._let_go_of(key)   # (an old worker's: never replayed, dropped there)
                return
            if frame is not None and isinstance(metas, list) and len(metas) == 2:
                try:
                    template = StretchTemplate(sid, stretch, frame, metas)
                except (ValueError, TypeError, IndexError, KeyError):
                    return   # (a template that does not read: its stretch replays as ops)
                if stretch.piece and _largest(template.input_metas) >= loop_cuts.BIG_ARRAY_BYTES:
                    self._let_go_of(key)   # (a loop of large arrays: see BIG_ARRAY_BYTES)
                    return
                if early == 1 and self._early and not template.unpredicted \
                        and not any(op[0] == m.KIND_UPLOAD for op in template.ops):
                    template.early_plan = EarlyPlan(template.records, len(template.ops))
                self.templates.add(template)
        else:   # (an op failed, or the worker keeps no more): never offered again
            self._refused += 1
            self._decided.add(hash(key))


def _fits_pieces(metas: Any, stretch: StretchKey) -> bool:
    """Whether the worker's metadata of a held stretch with a call of several results
    (the reply's ``hm``) has an entry for each piece. A worker from before such stretches
    were held numbers one result slot for the call (its replays would then fail its check
    of their results, a ``ProtocolError`` the user would see): its hold is let go."""
    return (isinstance(metas, list) and len(metas) == 2 and isinstance(metas[1], list)
            and len(metas[1]) == len(stretch.outs))


def _object_target(record: Any) -> int | None:
    """The id of the remote object whose method the key record *record* calls, or None: an
    object op's target is the object's id, which its key holds as a literal
    (``("l", "int", id)``)."""
    if type(record) is tuple and len(record) == 6 and record[0] == m.KIND_OBJECT:
        target = record[3]
        if type(target) is tuple and len(target) == 3 and target[:2] == ("l", "int"):
            return target[2]
    return None


def _object_targets(key: tuple) -> list[int]:
    """The ids of the remote objects whose methods the stretch *key* calls."""
    return [hid for hid in map(_object_target, key) if hid is not None]


def _unbound(key: tuple) -> tuple | None:
    """*key* with each object op's target made one placeholder, so that two loops over two
    objects made alike have the same one; None where it calls no object's method."""
    unbound, calls = [], False
    for record in key:
        if _object_target(record) is not None:
            record, calls = record[:3] + (_AN_OBJECT,) + record[4:], True
        unbound.append(record)
    return tuple(unbound) if calls else None


_AN_OBJECT = ("l", "object")
