"""How the worker's server sends a batch's reply (mixed into ``WorkerServer``): the reply
packed and sent with its streamed results, a usage report due before it, a reply that could
not go, the steady lane's answers (worker/steady_lane.py), which skip the batch's reading
and packing but not what the server does around any reply, and its replies pushed before
their messages come (worker/pushed_replies.py)."""

from __future__ import annotations

import sys
import time
from typing import Any

import zmq

from . import staged
from .links import UnixPeer

__all__ = ["ReplySending", "REPORT_GROWTH"]

#: A session's memory grown past its last report by this much (and an eighth) is reported
#: before the batch's reply, whatever the interval: once its client has the reply, the pool
#: counts it (a session asking for room next never finds this one empty: swap_pressure)
REPORT_GROWTH = 1 << 20


class ReplySending:
    """The reply side of ``WorkerServer`` (its links, executor, device, phases, swap and
    usage reports are the server's)."""

    def _claim_pushed(self, started: float, ident: Any, frames: list) -> bool | None:
        """Whether *frames* are the message the oldest pushed reply answered (worker/
        pushed_replies.py): None where it was served here — confirmed (committed ahead: its
        frees made now) or committed from the lane's run ahead —, its reply not sent again;
        True where the generic path must serve it so (the run ahead gone: a swap meanwhile,
        say); False where they are not (the generic path rolls the pushes back)."""
        lane = self.lane
        pushes = lane.pushes
        if not pushes.head_matches(frames):
            return False
        record = pushes.sent.popleft()
        x = self.executor
        if record.committed:   # (committed ahead: confirmed now)
            free = x.table.free
            for h in record.frees:
                free(h)
            x.draws.confirm()   # (its draws, if it drew, the client's for good)
            if record.params is not None:   # (its parameters: the loop's history)
                x.replay.ahead.remember(record.sid, record.params)
            if record.sid is not None:   # (an answered run ahead now: RunAhead.afresh)
                x.replay.ahead.afresh(record.sid)
            self.phases.mark("confirmed")
            x._batch_no = record.batch
            self._batch = record.batch
            self._client = ident
            self.swap.worked()
            pushes.confirmed += 1
            self._push_ahead(ident)
            self.phases.end()
            return None
        plan, lane.plan = lane.plan, None
        if plan is not None and plan.expected is record.expected and self.swap.swapped is None \
                and not self.pool_gone and x.replay.ahead.ahead is plan.ahead \
                and self._serve_in_lane(started, ident, plan, pushed=True):
            pushes.taken += 1
            return None
        pushes.quiet += 1
        return True

    def _push_ahead(self, ident: Any) -> None:
        """After a reply, or a pushed message served: the lane's next reply pushed where it
        is known, its message committed ahead where it may be, and the reply after it pushed
        in turn (one message ahead of the client at most: worker/pushed_replies.py)."""
        lane = self.lane
        pushes = lane.pushes
        for turn in range(2):
            plan = lane.plan
            if plan is None or not pushes.enabled:
                return
            if not pushes.pushed_for(lane.batch(plan)):
                # (a run ahead whose reads wait for the client's message already here:
                # that one taken first, the device running meanwhile; then read and pushed)
                ahead = plan.ahead
                if ahead is not None and ahead.deferred:
                    if turn:
                        lane.deferrals += 1
                        return
                    if pushes.may_commit_first(plan) and self.swap.swapped is None:
                        done = self._commit_then_read(ident, plan)
                        if done is None:
                            return
                        if done:
                            continue
                    lane.read_deferred(plan)
                packed = pushes.offer(lane, self._batch)
                if packed is None:
                    return
                self.phases.mark("push_packed")
                self._report_before_reply()   # (what the client is told, the pool knows first)
                self.phases.mark("push_reported")
                try:
                    self.links.send_message(ident, [packed])
                except zmq.ZMQError as exc:
                    pushes.roll_back(lane, True)
                    self._undelivered(exc)
                    return
                self.phases.mark("pushed")
            if self.swap.swapped is not None or not pushes.may_commit_ahead(lane, plan):
                return
            lane.plan = None
            if not lane.commit_ahead(plan, pushes.sent[-1]):
                lane.plan = plan   # (its message committed when it comes, as ever)
                return
            self.phases.mark("committed")
            lane.after_reply(plan)   # (the next replay run ahead: the lane's plan again)
            self.phases.mark("ahead")

    def _commit_then_read(self, ident: Any, plan: Any) -> bool | None:
        """A device-bound step whose reads wait (worker/pushed_replies.py,
        ``Pushes.may_commit_first``): its message committed ahead first, the device still
        running it — the commit needs no value read —, then its reads made, its reply
        pushed and the next step run ahead. Read, pushed and then committed, the worker's
        commit (the inputs' copies aside, the write-back, the answer's book-keeping) came
        between the step's end on the device and the next one's launch: the device waited
        for it at every message (heat2d 2048², its device time about the worker's own).
        True where done so; False where nothing was done (the reads, the push and the
        commit then go as ever); None where the commit was made and taken back, its reads
        having failed or warned (nothing pushed: its message, if it comes, is served as
        ever by the generic path)."""
        lane = self.lane
        pushes = lane.pushes
        ahead = plan.ahead
        record = pushes.reserve(lane)
        if record is None:
            return False
        if not pushes.may_commit_ahead(lane, plan):
            pushes.sent.pop()
            return False
        lane.plan = None
        if not lane.commit_ahead(plan, record):
            pushes.sent.pop()
            lane.plan = plan
            return False
        self.phases.mark("committed")
        ahead.deferred = False
        x = self.executor
        overlapped = False
        try:
            # (the next step launched first where it may be, the device going on from this
            # one to it as this one is read: worker/lane_overlap.py; dropped by a roll-back)
            overlapped = lane.launch_next_first(plan, ahead)
            lane.read_committed(plan, ahead)
            if ahead.read_values is None or x.poisoned_at is not None or x._warnings or x.fatal:
                self._take_back_first(record)   # (and the next step launched, if it was)
                pushes.first_undone += 1
                lane.overlaps_undone += overlapped
                return None
            packed = pushes.pack(lane, plan, record, ahead, self._batch)
            self.phases.mark("push_packed")
            self._report_before_reply()   # (what the client is told, the pool knows first)
        except BaseException:   # (a device fault in the reads' wait, say: the commit taken
            self._take_back_first(record)   # back as far as it can be and the record gone,
            raise                           # so that its message, if it comes, is served
        try:                                # as ever and fails there: not confirmed with no
            self.links.send_message(ident, [packed])   # reply ever sent)
        except zmq.ZMQError as exc:
            pushes.roll_back(lane, True)
            self._undelivered(exc)
            return None
        self.phases.mark("pushed")
        pushes.first += 1
        if overlapped:   # (the next replay run ahead already: the lane's plan again)
            lane.after_launched(plan)
        else:
            lane.after_reply(plan)   # (the next replay run ahead: the lane's plan again)
        self.phases.mark("ahead")
        return True

    def _take_back_first(self, record: Any) -> None:
        """A message committed before its reads whose reply will not be pushed: its commit
        undone (its writes copied back from the values kept aside, its draws taken back) and
        its record gone, never pushed. Where the undoing itself fails (a device fault), the
        record goes all the same: its message is then served as ever and raises there."""
        pushes = self.lane.pushes
        try:
            pushes.roll_back(self.lane, False)
        finally:
            if record in pushes.sent:
                pushes.sent.remove(record)

    def _serve_in_lane(self, started: float, ident: Any, plan: Any, pushed: bool = False) -> bool:
        """A loop's next replay, the one the steady lane knew byte for byte (worker/
        steady_lane.py): answered from its run ahead with what :meth:`_serve_message` does
        around any batch (the client's presence, the swap clock, the usage report), and the
        next one run ahead by the lane. False where its reads, made now, failed or warned:
        nothing was done, and the message is served as ever. *pushed*: its reply went
        before it (worker/pushed_replies.py): committed, nothing sent, and the next reply
        pushed."""
        lane = self.lane
        packed = lane.answer(plan, pushed)
        if packed is None:
            return False
        phases = self.phases
        self._client = ident
        if self.links.presence.over is None:
            self.links.presence.verified(ident)
        batch = lane.batch(plan)
        self._answering = None   # (answered below: a bug after must not answer again)
        self._batch = batch
        self.swap.worked()
        phases.mark("run")
        try:
            if not pushed:
                self._report_before_reply()
                self.links.send_message(ident, [lane.with_time(packed, time.perf_counter() - started)])
                phases.mark("sent")
        except zmq.ZMQError as exc:
            self._undelivered(exc)
        finally:
            lane.after_reply(plan)
            phases.mark("after_reply")
        self._push_ahead(ident)
        phases.end()
        return True

    def _report_before_reply(self) -> None:
        """A usage report due goes before the reply, and one of memory grown at once: what
        the client was told, the pool knows first, so a session asking for room next never
        finds this one empty (swap_pressure)."""
        reported = self._reported_memory
        if self.executor.memory_now() > reported + max(REPORT_GROWTH, reported >> 3):
            self._last_usage_time = 0.0
        self._report_usage()

    def _undelivered(self, exc: zmq.ZMQError) -> None:
        """A reply that could not go: the client went away or stopped reading (its loss)."""
        self.executor.take_streams()
        if not self._undeliverable:
            print(f"gpuwb worker: a reply could not be delivered ({exc}); "
                  "the client has gone", file=sys.stderr)
        self._undeliverable += 1

    def _send_reply(self, ident: Any, reply: dict, out: list) -> None:
        send = self.links.send_message
        packed = self.executor.pack_reply(reply)
        self.phases.mark("encoded")
        send(ident, [packed, *out])
        self.phases.mark("sent")
        staging = ident.staging if type(ident) is UnixPeer else None
        for array in self.executor.take_streams():
            if staging is not None:   # through shared memory (a same-host client)
                staged.send_download(self.links, ident, array)
                continue
            for chunk in self.device.chunks_to_host(array):
                send(ident, [chunk])

