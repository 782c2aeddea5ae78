"""Measuring a session's device time, and keeping its launched-but-unfinished work short.

The executor calls :meth:`Pacer.after_ops` every few ops (``countdown``) and at
batch boundaries. The pacer records device markers (CUDA events on a GPU)
between ops. Each *segment* of work runs from a start marker to an end marker;
from the segments the device has finished it learns the session's device time
(``busy``) and the device time of an op (``per_op``, a moving average).
Segments chain (one's end is the next one's start) while the device is kept
busy; a segment that starts after the device went idle, or after the worker
waited for the device lease, gets a fresh start marker, so the time other
sessions ran is never charged to this one. Markers are recorded every op when
ops are long and every few dozen when they are short, so pacing costs a
fraction of a microsecond per op.

With a lease (the ``fair`` and ``fifo`` policies) it also keeps the work
launched ahead of the device short: before launching more it waits until the
estimated unfinished work is below ``LEAD`` and no segment is queued behind a
running one. A worker that launched 200 ms of GEMMs ahead would make a
newcomer wait 200 ms whatever the arbiter decides; with pacing it waits for
the op on the GPU. A session alone on its device (the arbiter tells its lease when a second
session attaches, and when it leaves) keeps a longer queue, LONE_LEAD, and marks it as
seldom: nobody waits behind it. Waits shorter than a millisecond spin on the device's
markers (a sleeping thread wakes tens of microseconds late, which would leave
the GPU idle between ops); longer ones sleep on the lease's socket, so a yield
from the arbiter wakes them at once. The pacer also reports device time to the
arbiter and hands the device over when the lease says so, once the work it
launched has finished: two sessions' kernels never share the GPU (CUDA would
time-slice the two contexts, and each one's markers would measure some of the
other's work), so every segment measures its own session's work alone.
"""

from __future__ import annotations

import json
import math
import os
from collections import deque
from time import perf_counter
from typing import Callable

from gpu_backend.runtime.gc_pauses import record_pauses
from ..protocol import spinning
from .lease import DeviceLease
from .replay_costs import MEASURE_EVERY, ReplayCosts

__all__ = ["Pacer", "LEAD", "LONE_LEAD", "GRAIN", "MEASURE_EVERY"]

#: Estimated device seconds of work a paced worker may have launched and unfinished
#: beyond the op running now: the next op is launched this long before the running one
#: should end, so the device does not idle, and a newcomer waits at most about this
#: much more than the running op. A pacer's *lead* overrides it (``GPUWB_PACING_LEAD_US``,
#: worker/settings.py, a diagnostic: benchmarks/fairness.py's ``fair+leadUS`` policies
#: measure what the lead costs).
LEAD = 150e-6
#: The lead of a session alone on its device (the arbiter tells its lease so): nobody waits
#: behind its queue, so it keeps about this much work launched ahead, with a marker about
#: as often, and a newcomer waits for it once, when it attaches (the holder is told then), or,
#: under ``share``, when a session silent past the pool's company_idle_ms asks again.
#: Paced at LEAD, a lone training loop of 0.5 ms GEMMs among 15 µs elementwise ops ran at
#: 0.84 of its rate under `none` (H100 runs 90, 95): the per-op estimate averages the two,
#: a marker went after every op and one op queued behind a GEMM, so the host launched the
#: small ops while the device waited for them.
LONE_LEAD = 0.002
#: Device seconds of work between two markers when ops are short (a marker and its
#: bookkeeping cost a few microseconds of host time, ~15 µs with a lease: two events and
#: a look at the lease). At 100 µs a lone loop of 60 µs GEMMs was marked at every op, and
#: ran at 0.84 of its rate under `none` (H100 run 15, 2026-11-23); a newcomer may wait for
#: up to this much more work than LEAD.
GRAIN = 250e-6
#: Most ops between two markers.
MAX_COUNTDOWN = 64
#: The per-op estimate averages over about this much of the session's recent device time:
#: a fence's tiny ops among long GEMMs barely move it.
ESTIMATE_SPAN = 0.005
#: While launching, look for arbiter messages at most this often (host seconds): asking
#: ZeroMQ costs 2-3 µs. Waits for the device see a yield at once; a quantum needs no
#: message, the worker counts it itself.
CHECK_SECONDS = 0.0005
#: Waits longer than this sleep on the lease's socket (until this much before the end);
#: shorter ones spin on the device's markers.
SPIN_SECONDS = 0.0008
#: A holder whose turn is spent with at most this many bytes of its batch's records left
#: to run (the batch's tail: an index and a read of one element are 54 bytes, one GEMM 39)
#: runs them, and hands over as the closing read begins (release_before_read), rather than
#: before them: handed over a GEMM loop's last two ops before its read, a user of four 2.7 ms
#: GEMMs and a read was granted again for the read alone, after the other's whole turn,
#: two more hand-overs per batch (H200 2026-11-25: the device idle 13 % of the time).
#: A preemption is never deferred.
TAIL_BYTES = 64
#: The part of a segment's device time charged while it ran beside the last holder's work
#: (a newcomer that launched without waiting out a long kernel): two contexts time-sliced
#: share the device about evenly, so each is charged half of the overlap (harvest).
OVERLAP_SHARE = 0.5
#: While spinning, look at the lease this often: a preempted holder must not launch
#: one more op behind the newcomer.
SPIN_CHECK_SECONDS = 50e-6
#: The lead of a session holding a standing grant beside others (``share``, arbiter/share.py):
#: its kernels run beside theirs, time-sliced by CUDA; a user held back stops within about
#: this much of its work, so it bounds how far past its weight a user runs. A deeper queue
#: keeps a context's slices busy while its worker is between launches: measured (H200 run
#: 9, 2026-11-26, docs/fair-share.md, "A deeper launch queue"), 4 ms gave work conservation
#: 0.974-1.012 where users sync against 0.946-0.971 at 1 ms, and a trainer beside long GEMMs
#: 0.555 against 0.425; with long replays paced (worker/stretch_replay.py,
#: SHARE_UNPACED_REPLAY) the deep-queued 1:2:4 users came within 1.5-1.7 % of their weights
#: (runs 13-14, H100 and H200); 16 ms lost the weights (47.7 %). (The served pool's 1:2:4
#: test on the NumPy device falls short on a heavily loaded VM at 1 ms as at 4 ms: the load,
#: not the lead.) ``GPUWB_SHARE_LEAD_US`` sets it (worker/settings.py). The sessions of the
#: heaviest users attached to a device launch deeper where the arbiter says so (the lease's
#: ``lead``: arbiter/share.py, the pool's ``share_deep_lead_ms``, 16 ms by default).
SHARE_LEAD = 0.004
#: The longest a free-running session beside others (a standing grant, not alone) sleeps
#: while holding back before it looks at its markers again (Pacer._nap): its per-op estimate
#: is what others' time-slicing made its ops take, and ops that run faster once they go quiet
#: left its queue dry under the estimate's sleep. Syncing users 1:2:4 on H100 hosts, five
#: passes of runs 37-39: work 0.947 of the device against 0.922 without (`none` 0.955), the
#: interactive user's p99 beside 2048² GEMMs no worse, the split's error 5.4 % against 4.0 %
#: (mean; 2.3-7.9 % across passes either way). ``GPUWB_SHARE_NAP_US`` sets it (0: no bound).
SHARE_NAP = 0.0005
#: How often a free-running session (standing grant, beside others) places a marker: its
#: reports of device time come this often, whatever its lead. ``GPUWB_SHARE_GRAIN_US`` sets
#: it (worker/settings.py). Beside a light interactive user, a saturating 2048² GEMM user's
#: segments were 3 ops at this grain against 30 under ``none``, and it ran 0.01-0.05 below
#: ``none``'s rate (H200 runs 325-328); 4 ms did no better, and at 16 ms syncing users'
#: 8 ms batches ended between two markers and their weights 1:2:4 were lost (run 329;
#: docs/fair-share.md, "Is it the grain?").
SHARE_GRAIN = 0.001


class Pacer(ReplayCosts):
    def __init__(self, device, lease: DeviceLease | None = None, *, lead: float | None = None,
                 trace: bool = False, release_at_read: bool = True,
                 share_lead: float | None = None, share_nap: float | None = None,
                 share_grain: float | None = None,
                 priced: bool = False) -> None:
        self.device = device
        self.lease = lease
        #: beside others, a held stretch's replay is charged its own cost, not its span
        #: (worker/replay_prices.py, ``GPUWB_SHARE_PRICED``)
        self.priced = priced
        #: the device seconds charged so far at replays' own costs (part of ``busy``; told
        #: to the arbiter apart, as the lease's ``own``)
        self.own = 0.0
        #: the replay being launched that is charged its own cost (None: none)
        self._price = None   # (a ReplayPrice: worker/replay_costs.py)
        #: the lead while free running beside others (SHARE_LEAD unless set)
        self.share_lead = SHARE_LEAD if share_lead is None else share_lead
        #: while free running beside others, the longest sleep of a hold-back before the
        #: device's markers are looked at again (SHARE_NAP unless set; 0: no bound, None
        #: here; see _nap)
        self.share_nap = SHARE_NAP if share_nap is None else (share_nap or None)
        #: while free running beside others, the device time between two markers
        #: (SHARE_GRAIN unless set)
        self.share_grain = SHARE_GRAIN if share_grain is None else share_grain
        #: hand the device over as a batch's closing read begins (release_before_read)
        self.release_at_read = release_at_read and lease is not None
        #: (grant, slot) released by release_before_read whose baton is not passed yet
        self._early: tuple | None = None
        #: bytes of the batch's records not yet run, as the executor last said before a
        #: call of after_ops (read once: see TAIL_BYTES)
        self.batch_left = 1 << 62
        #: estimated device seconds of launched, unfinished work allowed beyond the running op
        self.lead = LEAD if lead is None else lead
        #: device seconds this session's work has used, as measured so far
        self.busy = 0.0
        #: wall seconds its batches waited for the device lease while others held it (the
        #: users' side of sharing: ``%gpu status``'s "waited", issue 51)
        self.waited = 0.0
        #: estimated device seconds per op (None until measured): the device's own time for
        #: the session's recent ops, gaps between them left out
        self.per_op: float | None = None
        self._sum_seconds = 0.0          # ... as decaying sums of own device time and of ops
        self._sum_ops = 0.0
        self.countdown = 1
        #: launched segments, oldest first: (charged-from marker, own start marker, end, ops)
        self._pending: deque = deque()
        self._last_end = None            # the end marker of the newest segment
        self._own_start = None           # the start marker of the segment being launched
        self._own_host = 0.0             # ... and the host time it was recorded at
        self._chained = False            # ... which is charged from the last end marker
        self._caught_up = False          # ... which began with the device idle (host-bound)
        self._free_at = 0.0              # host time when launched work should be done
        self._check_at = 0.0             # host time of the next look at the lease's socket
        self._left_at = 0.0              # host time the executor last went back to launching
        self._quantum_left: float | None = None   # a quantum deferred past an overlap (_acquire)
        self._launch = 0.0               # host seconds it takes to launch until the next call
        #: the next op starts a segment: the executor calls start_segment() before launching it
        self.fresh_due = True
        #: *trace* (GPUWB_PACING_TRACE=DIR): every segment and grant, kept for write_trace
        #: (a diagnostic for benchmarks/fairness.py; off otherwise)
        self.trace: list | None = [] if trace else None
        if self.trace is not None:   # ... with the garbage collector's pauses and the yields
            record_pauses(self.trace)
            if lease is not None:
                lease.trace = self.trace
        self._grants_traced = 0   # (the lease's grants taken, as far as the trace has them)
        self._marked = 0                 # ops of this batch already in a segment
        #: host time the executor began its newest op (it sets this before each op): a
        #: segment's launches end there; an op that then waits for the device (a fetch)
        #: leaves the host idle, not the device
        self.began = 0.0
        #: host time the executor ended its newest batch (the ops and their synchronize):
        #: from then until the end-of-batch marker (after the reply is sent) the device
        #: waits for the host
        self.ended = 0.0
        #: (its cost, busy before) of the replay being measured, until its batch's end
        self._measuring: tuple | None = None

    # ------------------------------------------------------------ measuring
    def _mark(self, ops: int) -> None:
        if self.fresh_due:   # no op was launched since the last marker: nothing to mark
            return
        own = self._own_start
        charged_from = self._last_end if self._chained and self._last_end is not None else own
        # The span from its own start is the ops' device time if the device had not begun
        # them when the last one was launched. If it had (it was idle at the start, or caught
        # up while the host launched), the span also holds the device's waits for the host,
        # at most the host's time from the start marker to now: the span less that is a
        # lower bound of the device's work. (Taught whole, host-bound tiny ops on an H100
        # "took" 25 µs each, the host's pace; the countdown then marked every 4th op and a
        # lone session under `fair` lost a third of its pipelined rate. Not taught at all,
        # an H100 run's lone small-GEMM loop under `fair` fell to 0.68x of `none`: a GEMM
        # launched as the device caught up could no longer correct an estimate.) The host's
        # time counts until it began the segment's last op: if that op waited for the device
        # (a fence's fetch after 16 GEMMs), the device was not waiting for the host then.
        # (Counted until now, the wait cancelled the GEMMs: a lone GEMM loop taught ~1 µs
        # per GEMM, launched 16 at a time, and an interactive user preempting it waited for
        # 11 ms of them: fairness run 13's interactive+1, p99 6.5 ms.) It counts again from
        # the batch's end to now: the end-of-batch marker is recorded after the reply was
        # sent. (Left out, a sync's segment taught the reply's host time, a tiny op's
        # estimate grew to 0.2-0.3 ms, and hold-backs slept on it: run 14.)
        slack = 0.0
        end = None
        if own is not None and self.device.reached(own):
            if self.device.runs_behind_host:
                now = perf_counter()
                slack = max(0.0, self.began - self._own_host)
                if self.ended > self.began:   # marked at the batch's end
                    slack += max(0.0, now - self.ended)
            else:   # the host's work is done as issued: all of the span is the host's own
                # time and teaches nothing (its markers are the process's CPU time, which
                # other threads of the process advance too: the wall time since the start
                # taken off it left 2 µs an "op" on a CI host, and a pause of this process —
                # a loaded machine — must never be taught as device time either)
                slack = math.inf
        if end is None:
            end = self.device.marker()
        price = self._price
        if price is not None:
            price.segments += 1
        self._pending.append((charged_from, own, end, ops, slack, price))
        self._last_end = end
        self._own_start = None
        self._chained = True
        self.fresh_due = True
        if self.per_op is not None:
            self._free_at = max(self._free_at, perf_counter()) + ops * self.per_op

    def harvest(self) -> None:
        """Account every segment the device has finished (never blocks). A segment is charged
        from the end of the one before it while they chain (the device time between them is
        the session's: it held the device), and teaches the per-op estimate only its own
        span, so that a late launch does not make the next one later still."""
        pending, device = self._pending, self.device
        if not pending or not device.reached(pending[0][2]):
            return
        while pending and device.reached(pending[0][2]):
            charged_from, own, end, ops, slack, price = pending.popleft()
            if charged_from is None:
                if price is not None:
                    self._priced_segment(price, 0.0)
                continue
            charged = device.between(charged_from, end)
            span = charged if own is None or own is charged_from else device.between(own, end)
            if self.lease is not None and self.lease.overlapping is not None \
                    and self.lease.still_overlapping():
                # launched beside the last holder's long kernel (its drain not waited out):
                # CUDA time-slices the two contexts, and this segment's span holds the other's
                # slices too. Charged whole, a loop of small GEMMs beside 22 ms kernels was
                # charged 3.5x their time alone, fell behind in virtual time, stopped
                # preempting and waited out a kernel at every read (0.09 of its rate alone,
                # 0.22 under `none`, H200 2026-11-25): the overlap is split between the two
                charged *= OVERLAP_SHARE
            seconds = max(0.0, span - slack)   # the ops' device time, or a lower bound (_mark)
            if self.trace is not None:
                self.trace.append((perf_counter(), ops, seconds, charged, self.per_op))
            if ops and own is not None:
                # older samples fade with the device time that passed, not with the time
                # taught: host-bound segments teach about nothing, and an estimate taught
                # once (a slow first op after idle) must not outlive them
                keep = math.exp(-span / ESTIMATE_SPAN)
                self._sum_seconds = self._sum_seconds * keep + seconds
                self._sum_ops = self._sum_ops * keep + ops
                self.per_op = self._sum_seconds / self._sum_ops
            if price is None:
                self.busy += charged
            else:   # (charged its own cost once all of it is measured)
                self._priced_segment(price, charged)
            if own is not None:
                device.drop_marker(own)
            if charged_from is not own:
                device.drop_marker(charged_from)
        if self._quantum_left is not None:   # the first segment after an overlap: see _acquire
            lease = self.lease
            if lease.holding and lease.hand_over_at is not None:
                lease.hand_over_at = min(lease.hand_over_at, self.busy + self._quantum_left)
            self._quantum_left = None
        self._free_at = perf_counter() + sum(e[3] for e in pending) * (self.per_op or 0.0)
        lease = self.lease
        if not pending and lease is not None and (lease.tail_open or lease.release_open):
            lease.done(self.busy)   # (share: the work launched before its idle, or its
                                    # release, has run)

    def _start_fresh(self, always: bool = False) -> None:
        """The next segment is charged from its own start, not from the last marker: after a
        wait for the device (*always*: others ran meanwhile), or when the device has finished
        everything and nobody waits (the idle time is nobody's). While others wait, a holder's
        idle device time is its own: it keeps the device from them."""
        if always or not self._pending and not self._contended():
            self._chained = False

    def _contended(self) -> bool:
        lease = self.lease
        if lease is None:
            return False
        lease.check_preempted()
        return lease.hand_over_at is not None or lease.at_batch_end

    def start_segment(self) -> None:
        """Called by the executor right before it launches an op, when ``fresh_due``. A segment
        chained on the last one needs a start of its own only to teach the per-op estimate,
        so not without a lease (nothing is paced). With one, every segment teaches, the
        host-bound ones about nothing (see _mark): an estimate must fade when the ops that
        taught it are gone (one event per segment: a fraction of a microsecond per op)."""
        self.fresh_due = False
        pending = self._pending
        self._caught_up = not pending or self.device.reached(pending[-1][2])
        chained = self._chained and self._last_end is not None
        if self._own_start is None and not (chained and self.lease is None):
            self._own_host = perf_counter()
            self._own_start = self.device.marker()

    def exclusive(self) -> bool:
        """Whether this session's work runs alone on the device now: it holds the lease and
        did not start beside a holder stuck in a long kernel (see _acquire), and not a
        standing grant beside others (``share``). Without a lease CUDA time-slices the
        sessions, and nothing is known."""
        lease = self.lease
        return lease is not None and lease.holding and self._quantum_left is None \
            and (not lease.standing or lease.alone)

    #: a batch run whole but for a preemption: a held stretch's replay re-run paced
    #: (worker/stretch_replay.py) hands the device over mid-way only to a newcomer that takes
    #: it back (lease.preempted), not at its turn's end: a training step split across turns
    #: waited out a long user's 22 ms kernel between its ops (dl-mix's trainer 0.64 -> 0.25
    #: of its rate, H200 2026-11-25); its turn ends with the batch (end_batch), as before
    atomic = False

    def _must_stop(self, projected_busy: float) -> bool:
        """Whether to launch nothing more and hand the device over: the turn is spent
        (counting *projected_busy*, the work launched) or a newcomer took it back; in a
        batch run whole (:attr:`atomic`), only the latter."""
        lease = self.lease
        return lease.must_hand_over(projected_busy) and (not self.atomic or lease.preempted)

    def in_company(self) -> bool:
        """Whether this session is paced with other sessions attached to its device: what it
        launches at once, others may have to wait behind (worker/stretch_replay.py)."""
        return not self.alone_now()

    def may_run_ahead(self, beside: bool = True) -> bool:
        """Whether a replay may be launched before its client asks for it (worker/
        run_ahead.py): with no lease, alone on the device, or (*beside*) free-running beside
        others under a standing grant (``share``, not told to stop), where it waits for
        nobody's turn and nobody waits for its own, and its device time is measured and
        charged as any batch's. (Beside others only since issue 51's run 94: `none` runs
        an interactive user's small replay ahead in the 10 ms between its requests, and a
        session beside others under `share` did not, so its requests waited for the
        device behind a saturating user's kernels: p50 0.8-1.7 ms against 0.5-0.7.)"""
        return self.alone_now() or (beside and self._free_running())

    def begin_ahead(self, beside: bool = True) -> bool:
        """:meth:`begin_batch` for a replay run ahead (worker/run_ahead.py), which nobody
        has asked for: it begins only where it waits for nothing (:meth:`may_run_ahead`, the
        baton's yield word looked at), and where no word of the arbiter's waits unread
        (the serving loop acts on it: read here and declined, it would be lost to its idle
        loop); else False, and the lease is left as it was (no grant handed back, none asked
        for: the client's next message may never come). A standing holder that said
        ``idle`` says ``want`` again without reading (Pacer._acquire would read, and a word
        come meanwhile would hand the grant back asking for it)."""
        lease = self.lease
        if lease is not None:
            if lease.pending():
                return False
            lease.check_preempted()
            if not self.may_run_ahead(beside):
                return False
            lease.busy_again()
        return self.begin_batch(_at_once)

    def answers_unlaunched(self, beside: bool = True) -> bool:
        """Whether a replay answered from the one run ahead needs no batch of the pacer's
        (it launches nothing: Executor.run_batch, end_unlaunched): alone, or (*beside*)
        under a standing grant beside others (``share``); not where sessions take turns."""
        return self.alone_now() or (beside and self.side_by_side())

    def alone_now(self) -> bool:
        """Whether nobody is paced against this session now (no lease, or alone on the
        device): its measurements are its own (:meth:`learn`)."""
        return self.lease is None or self._alone()

    def out_of_work(self, more_work: Callable[[], bool]) -> None:
        """After an answer from the run ahead that no run ahead followed (Executor.
        after_reply): a standing holder beside others, out of work and not yet said so,
        says ``idle`` as :meth:`end_batch` would (the run ahead's batch, which would have,
        did not come; the arbiter would count it runnable till its idle loop). Alone it
        says nothing, as ever."""
        lease = self.lease
        if lease is not None and lease.holding and lease.standing and not lease.idle_said \
                and not self._alone() and not more_work():
            lease.idle(self.busy, self.per_op, self._tail())

    def side_by_side(self) -> bool:
        """Whether this session holds a standing grant (``share``): it launches beside the
        other sessions of its device, nobody waiting for a turn."""
        lease = self.lease
        return lease is not None and lease.standing and lease.holding

    def _alone(self) -> bool:
        """Whether this session holds the device with no other session attached to it (so
        nobody waits behind its queue)."""
        lease = self.lease
        return lease is not None and lease.alone and lease.holding \
            and lease.hand_over_at is None and not lease.at_batch_end

    def _free_running(self) -> bool:
        """Whether this session launches beside others under a standing grant (``share``),
        not told to stop: nobody waits for the device to drain behind its queue."""
        return self.side_by_side() and self.lease.hand_over_at is None \
            and not self.lease.at_batch_end

    def _ahead(self) -> float:
        return max(0.0, self._free_at - perf_counter())

    def _next_countdown(self) -> int:
        """Ops until the next marker: about GRAIN of device time (every op while unknown).
        Without a lease markers only account device time: few are enough. While the device
        keeps up with the host, twice as many ops as last time (tiny ops need no pacing),
        but never more than the per-op estimate allows: a holder whose device caught up
        while it waited for its own fence would otherwise launch 64 long ops (45 ms of
        0.7 ms GEMMs) before it next looked at its lease, and a newcomer would wait for
        all of them (fairness run 9: interactive p99 31 ms)."""
        if self.lease is None:
            return MAX_COUNTDOWN
        grain = LONE_LEAD if self._alone() else self.share_grain if self._free_running() else GRAIN
        bound = MAX_COUNTDOWN if self.per_op is None else \
            max(1, min(MAX_COUNTDOWN, int(grain / max(self.per_op, 1e-9))))
        if self._caught_up:
            return min(bound, self.countdown * 2)
        return 1 if self.per_op is None else bound

    def _read_lease(self) -> None:
        """Take in the arbiter's messages, if it is time to look (see CHECK_SECONDS)."""
        now = perf_counter()
        if now >= self._check_at:
            self._check_at = now + CHECK_SECONDS
            self.lease.read(self.busy)

    def _acquire(self, interrupted: Callable[[], bool]) -> bool:
        """Hold the lease, waiting if needed; a segment after a wait starts afresh."""
        lease = self.lease
        if lease.holding and lease.idle_said:   # (a standing grant, idle till now: share)
            lease.read(self.busy)
            if self._contended():   # told to stop meanwhile: its grant goes back, ask anew
                self._hand_over(want=True)
            else:
                lease.busy_again()
        if lease.holding:
            if self.trace is not None and lease.grants != self._grants_traced:
                # (a grant read between batches, not while asking: traced as it is used. Left
                # out, a session granted the device alone as it attached, or while idle, showed
                # no grant at all in the trace: fairness_why's test saw it once under load)
                self._trace_grant(lease)
            return True
        asked = perf_counter()

        def interrupted_or_run() -> bool:
            # (a standing grant given back with work running, share: while it waits to be
            # let go again, its ``done`` goes once that work has run, within the 1-2 ms the
            # lease's wait looks here: the arbiter counts the session on the device till
            # then, not till the estimate of that work, which beside another context's
            # long kernel fell short by tens of milliseconds: H200 run 87's trace)
            if lease.release_open:
                self.harvest()
            return interrupted()

        counted = True
        try:
            if not lease.acquire(self.busy, interrupted_or_run):
                return False
            # (granted alone, with no last holder's work to wait for: the wait was the
            # arbiter's answer, not another session's turn; on a loaded host that answer
            # took 50 ms, and a user alone showed half its time "waited")
            counted = not (lease.alone and lease.after is None)
            drained = lease.wait_for_previous()
        finally:
            if counted:
                self.waited += perf_counter() - asked
        if self.trace is not None:
            self._trace_grant(lease)
        self.harvest()
        if not drained and lease.hand_over_at is not None:
            # The last holder sits in a long kernel: this session's first ops run time-sliced
            # beside it and their segment measures part of it. Its quantum counts from that
            # segment's end, or a preempting interactive op "spent" it inside its own request
            # and handed the device back, to wait out the next long kernel (fairness run 20's
            # interactive+long: p99 97 ms beside 75 ms kernels).
            self._quantum_left = lease.hand_over_at - self.busy
            lease.hand_over_at = math.inf
        self._start_fresh(always=True)
        return True

    def _trace_grant(self, lease: DeviceLease) -> None:
        """The lease's newest grant into the trace (with whether it names a hand-over)."""
        self._grants_traced = lease.grants
        self.trace.append((perf_counter(), "grant", lease.hand_over_at is not None))

    def _hand_over(self, want: bool) -> None:
        """Release the lease at once (charging the launched work as estimated), let that
        work finish, then pass the baton: the next holder, granted meanwhile, launches only
        then. Its kernels never run beside this session's (CUDA would time-slice the two
        contexts, and each session's markers would measure part of the other's work), and
        the release and grant messages travel while the device still has work.

        A standing grant (``share``) is given back without the drain: nobody waits on its
        baton (sessions run side by side), and a user held back only while another is behind
        it is often admitted again before its launched work is done. Drained first, it
        launched again only once its queue had run dry, and the device idled for its
        relaunch whenever nobody else had work queued (issue 51: `share` lost work
        conservation to `none` where users sync, 0.911 against 0.938 for 1:2:4, H100 run
        13); now it launches as soon as it is admitted, its queue still running. (Not
        measured against the drain on one host: runs 14-18, other hosts, gave 0.910-0.926.)"""
        lease = self.lease
        grant, slot, standing = lease.grant, lease.slot, lease.standing
        self._quantum_left = None
        lease.release(self.busy, want, self._ahead(), self.per_op)
        if standing:
            return
        self._drain()
        lease.finished(grant, slot)

    def release_before_read(self, executed: int, more_work: Callable[[], bool]) -> bool:
        """The batch's last op reads a result back (a value, a download) and its *executed*
        ops before it are launched: if others wait and the client has sent nothing more, hand
        the device over now, as the read begins, not after the reply (issue 51). The next
        holder is granted while this session's last ops still run and launches, from the
        baton, as soon as they are done (:meth:`pass_baton`, after the read); the release
        says ``reading``, so the arbiter keeps no device idle for this session's return: others'
        queued work fills its gap. Before, the device idled from the read's end through the
        reply, the release, the arbiter's decision and the next holder's wake-up, and the gap
        rule kept it idle through the client's round trip (0.5 ms a batch for four 2 ms GEMMs
        and a read, H200 2026-11-25: work conservation 0.82 against 0.96 under `none`).
        Returns whether it handed over."""
        lease = self.lease
        if not self.release_at_read or not lease.holding or self._early is not None:
            return False
        self._read_lease()
        if lease.standing and not self._contended():
            # (share: nothing to hand over; out of work as the read begins, which lets users
            # held back for this one go while the read waits)
            if not more_work():
                self._say_idle(executed)
            return False
        if not self._contended() or more_work():
            return False
        if executed > self._marked:   # (the read waits for them: the drain after it must too)
            self._mark(executed - self._marked)
            self._marked = executed
        self.harvest()
        grant, slot = lease.grant, lease.slot
        self._quantum_left = None
        # (no ``ahead``: the work still running is charged with this session's next report,
        # as part of its cumulative device time. An estimate charged ahead is never given
        # back, and here it would be the whole segment just marked: on the NumPy device,
        # whose ops are done when launched, three users 1:2:4 read 0.16 / 0.34 / 0.50)
        lease.release(self.busy, False, 0.0, self.per_op, reading=True)
        self._early = (grant, slot)
        if self.trace is not None:
            self.trace.append((perf_counter(), "release-at-read", grant))
        return True

    def _say_idle(self, executed: int = 0) -> None:
        """A standing holder out of work: its launched ops marked, what is done charged,
        and the arbiter told (lease.idle), with how long the rest should run; that rest is
        charged with ``done`` once measured (harvest)."""
        if executed > self._marked:
            self._mark(executed - self._marked)
            self._marked = executed
        self.harvest()
        self.lease.idle(self.busy, self.per_op, self._tail())

    def _tail(self) -> float:
        """Wall seconds this session's launched, unmeasured work should still run."""
        return self._ahead() if self._pending else 0.0

    def pass_baton(self) -> None:
        """After a batch whose read began with the device handed over (release_before_read):
        once this session's work is done on the device (the read waited for it: at once),
        the next holder may launch. Nothing otherwise."""
        if self._early is None:
            return
        grant, slot = self._early
        self._early = None
        self._drain()
        self.lease.finished(grant, slot)

    def _drain(self) -> None:
        """Wait until the device has done all this session's launched work: sleep while the
        estimate says it is far off (a message on the lease's socket wakes it), spin on the
        newest marker for the last stretch."""
        device, lease = self.device, self.lease
        while self._pending and not device.reached(self._pending[-1][2]):
            ahead = self._ahead()
            if ahead > SPIN_SECONDS:
                lease.wait(ahead - SPIN_SECONDS / 2)
                continue
            newest = self._pending[-1][2]
            until = perf_counter() + SPIN_SECONDS
            while not device.reached(newest) and perf_counter() < until:
                pass
            self.harvest()
        self.harvest()

    # ------------------------------------------------------------ the executor's hooks
    def begin_batch(self, interrupted: Callable[[], bool]) -> bool:
        """Before a batch's first op: hold the device (paced policies); False if interrupted."""
        self.harvest()
        self._measuring = None   # (a replay is measured within its own batch only)
        self._end_price()        # (... and priced within it)
        if self.lease is not None and not self._acquire(interrupted):
            return False
        self._start_fresh()
        self.countdown = self._next_countdown()
        return True

    def after_ops(self, executed: int, interrupted: Callable[[], bool]) -> int:
        """The batch has launched *executed* ops so far: mark, measure, pace. Returns the ops
        to launch before the next call, or 0 if interrupted while waiting for the device."""
        now = perf_counter()
        if self._left_at:
            self._launch += 0.3 * (now - self._left_at - self._launch)   # a moving average
        self._mark(executed - self._marked)
        self._marked = executed
        if not self._pace(now, interrupted):
            return 0
        self.countdown = self._next_countdown()
        self._left_at = perf_counter()
        return self.countdown

    def after_piece(self, executed: int, interrupted: Callable[[], bool]) -> bool:
        """A piece of a split op (worker/splitting.py), the batch's op number *executed* + 1,
        was launched: mark it as one op, pace, hand the device over if due, as between two
        ops. False if interrupted while waiting for the device. The op's last piece is
        marked with the ops after it, by after_ops or end_batch (a piece counts as an op:
        the per-op estimate learns a piece's time, which is what a newcomer waits for)."""
        self._mark(executed - self._marked + 1)
        self._marked = executed
        # one piece queued behind the running one: the host has a piece's time to launch the
        # next (with LEAD's 150 µs a late wake-up between pieces left the device idle; a lone
        # loop of split 22 ms GEMMs ran 5-9 % below `none`, H100 runs 85-86); a newcomer
        # waits for two pieces at most, which its patience covers (two ops and DRAIN_SLACK)
        if not self._pace(perf_counter(), interrupted, lead=self.per_op):
            return False
        if self.fresh_due:
            self.start_segment()
        self.began = self._left_at = perf_counter()
        return True

    def _pace(self, now: float, interrupted: Callable[[], bool], lead: float | None = None) -> bool:
        """After a marker: measure, hold back, hand over if the quantum is spent, report.
        False if interrupted while waiting for the device again. *lead*: launched work
        allowed beyond the running op, if more than the pacer's own."""
        self.harvest()
        lease = self.lease
        if lease is not None and now >= self._check_at:
            self._check_at = now + CHECK_SECONDS
            lease.read(self.busy)
        lead = self._lead(lead)   # (after the read: a "company" word read now counts now)
        left, self.batch_left = self.batch_left, 1 << 62
        if lease is not None:
            # a spent quantum (counting the work already launched): launch nothing more
            spent = self._must_stop(self.busy + self._ahead())
            if spent and left <= TAIL_BYTES and self.release_at_read and lease.hand_over_at:
                spent = False   # the batch's tail, then the read's hand-over (TAIL_BYTES)
            if not spent and (len(self._pending) > 1 or self._free_at - now > lead):
                self._hold_back(lead)   # (else nothing to wait for)
                # asked again after the hold-back: a yield read while holding back stops the
                # next launch (judged before it only, a holder preempted then launched one
                # more op, and the newcomer waited for it: a 0.6 ms GEMM at the median, H100
                # fairness run 18)
                spent = self._must_stop(self.busy + self._ahead()) \
                    and not (left <= TAIL_BYTES and self.release_at_read and lease.hand_over_at)
            if spent:
                self._hand_over(want=True)
                if not self._acquire(interrupted):
                    return False
            lease.report(self.busy, self.per_op)
        self._start_fresh()
        return True

    def _lead(self, asked: float | None = None) -> float:
        """The launched work allowed beyond the running op now: the pacer's lead, or *asked*
        if more, or LONE_LEAD while alone on the device."""
        lead = self.lead if asked is None else max(self.lead, asked)
        if self._alone():
            return max(lead, LONE_LEAD)
        if not self._free_running():
            return lead
        # (the heaviest users' sessions launch deeper where the arbiter says: share.lead_for)
        return max(lead, self.share_lead, self.lease.lead or 0.0)

    def lead_now(self) -> float:
        """The launched work this session may keep ahead of the running op now (its lead:
        LONE_LEAD alone, SHARE_LEAD or the arbiter's deep lead free running beside others)."""
        return self._lead()

    def _hold_back(self, lead: float) -> None:
        """Wait while more than *lead* of launched work is unfinished; a yield cuts the wait
        short."""
        lease, device = self.lease, self.device
        # the queue must outlast the host's time to launch the next ops, or the device idles
        lead = max(lead, 1.5 * self._launch)
        spun = 0.0
        while self._pending:
            ahead = self._ahead()
            # more segments unfinished than the lead holds: an op longer than estimated
            queued_behind = len(self._pending) > max(1, int(lead / (self.per_op or lead)))
            if ahead <= lead and not queued_behind:
                return
            if self._must_stop(self.busy + ahead):
                return
            wait = ahead - lead if ahead > lead else 0.0
            if wait > SPIN_SECONDS:
                lease.wait(self._nap(wait - SPIN_SECONDS / 2))   # sleeps; an arbiter message wakes it
                lease.read(self.busy)
            elif spun > 2 * SPIN_SECONDS:   # behind one long kernel: sleep, it cannot be hurried
                lease.wait(self._nap(0.001))
                lease.read(self.busy)
            else:   # the last stretch: spin on the oldest segment, looking at the lease now and then
                oldest = self._pending[0][2]
                began = perf_counter()
                until = began + (min(wait, SPIN_SECONDS) if wait else SPIN_SECONDS)
                check = began + SPIN_CHECK_SECONDS
                while not device.reached(oldest):
                    now = perf_counter()
                    if now >= until:
                        break
                    if now >= check:   # the socket now and then; the yield word every turn
                        check = now + SPIN_CHECK_SECONDS
                        lease.read(self.busy)
                    if self._must_stop(self.busy + self._ahead()):
                        return
                    spinning.pause()   # (a client sharing this CPU runs meanwhile)
                spun += perf_counter() - began
                lease.read(self.busy)   # a yield that came meanwhile stops the next launch
            self.harvest()

    def _nap(self, seconds: float) -> float:
        """How long a hold-back sleeps: *seconds*, or at most ``share_nap`` while free running
        beside others (not alone). Its estimate of the launched work (``_ahead``) is the per-op time
        measured while others' contexts time-sliced the device; when one of them goes quiet
        (a read, a round trip) the ops run faster than that, and a worker asleep on the
        estimate wakes after its queue ran dry (H100 run 36: three syncing users lost 0.057
        of the work against ``none`` with nobody held back). Woken sooner, it sees its
        markers reached and launches. (A nap under a millisecond is a plain sleep: a yield
        that comes meanwhile is read at its end.)"""
        if self.share_nap is not None and self._free_running() and not self._alone():
            return min(seconds, self.share_nap)
        return seconds

    def end_batch(self, executed: int, more_work: Callable[[], bool]) -> None:
        """After a batch that launched *executed* ops."""
        if executed > self._marked:
            self._mark(executed - self._marked)
        self._marked = 0
        if self._price is not None:
            self._close_price()
        self.harvest()
        if self._measuring is not None:
            self._measured()
        lease = self.lease
        if lease is None or not lease.holding:
            return
        self._read_lease()
        if self._contended():   # others wait
            more = more_work()
            if not more or lease.at_batch_end or lease.must_hand_over(self.busy + self._ahead()):
                self._hand_over(want=more)   # nothing more to run: hand over at once
                return
        elif lease.standing and not more_work():   # (share: out of work, said once)
            lease.idle(self.busy, self.per_op, self._tail())
            return
        lease.report(self.busy, self.per_op)

    def end_unlaunched(self, more_work: Callable[[], bool]) -> None:
        """After a batch that launched nothing, alone or under a standing grant beside
        others (a replay answered from the one run ahead: its work was paced and charged
        when it ran; :meth:`answers_unlaunched`):
        nothing to mark, measure or say. Finished segments are accounted and the arbiter's
        messages taken in when it is time to look (a word of company ends the lone path:
        Executor.run_batch); told meanwhile that others wait (a yield, or the baton's
        word), the batch ends as any batch does, handing the device over. Out of work, it
        says so from its idle loop, as after any batch (``idle``), or beside others at once
        where no run ahead follows (:meth:`out_of_work`)."""
        self.harvest()
        lease = self.lease
        if lease is not None and lease.holding:
            self._read_lease()
            if self._contended():
                self.end_batch(0, more_work)

    def write_trace(self, directory: str, name: str) -> None:
        """Write the trace (if kept) to DIRECTORY/NAME.jsonl, whole or not at all: written
        under a hidden name and renamed, for a reader that waits for the file
        (benchmarks/fairness_why.py, its test) may see it the moment it appears, and the
        pool may end this process right after (a file seen half-written held no grant:
        CI, 2026-11-30)."""
        if self.trace is None:
            return
        part = os.path.join(directory, f".{name}.jsonl.part")
        with open(part, "w") as out:
            out.writelines(json.dumps(entry) + "\n" for entry in self.trace)
        os.replace(part, os.path.join(directory, f"{name}.jsonl"))

    def idle(self) -> None:
        """The worker has nothing to run: measure, and hand the device over if others wait
        (or a grant came that is no longer needed); a lone holder only reports."""
        self.harvest()
        lease = self.lease
        if lease is None:
            return
        lease.read(self.busy)
        if lease.holding and self._contended():
            self._hand_over(want=False)
        elif lease.holding and lease.standing:
            lease.idle(self.busy, self.per_op, self._tail())
        else:
            lease.report(self.busy, self.per_op)


def _at_once() -> bool:
    """A wait's interruption that comes at once (a run ahead waits for no grant)."""
    return True
