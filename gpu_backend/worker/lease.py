"""The worker's side of the arbiter: asking for the device, holding it, handing it over.

A session worker under the ``fair`` or ``fifo`` policy may launch work only
while it holds its device's lease. It asks when a batch arrives and it does
not hold it (``want``), reports the device time it measures while it holds it
(``used``), and hands it over (``release``) when its quantum is spent, when
told to at once, or, under ``fifo``, when its batch ends. A session alone on
its device keeps the lease across batches and never waits for the arbiter:
the hot path of a lone user sends at most one ``used`` report per
millisecond of device time. Messages are in docs/fair-share.md.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

import zmq

from ..arbiter.baton import BATON_TIMEOUT, Baton
from ..protocol import spinning
from ..protocol.codec import packb, unpackb

# plain ints: `int & zmq.POLLIN` goes through the enum's __and__ (microseconds a look)
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)

__all__ = ["DeviceLease", "REPORT_SECONDS"]

#: While holding with others waiting, report measured device time this often (device
#: seconds): the arbiter's shares are as current as this.
REPORT_SECONDS = 0.001
#: Alone, report this often: the reports move the arbiter's virtual clock forward (between
#: them the arbiter estimates a lone holder's progress by the clock), and each one wakes
#: the pool's arbiter thread, which in an embedded pool shares the user's interpreter.
REPORT_ALONE_SECONDS = 0.05
#: While waiting for a grant, look for a cancel from the client this often (seconds).
WAIT_SLICE = 0.002
#: A waiting worker spins this long before it sleeps (a grant that comes at once, the
#: device being free, finds it awake); the one next in line is told when to be awake.
ACQUIRE_SPIN = 0.0005
#: Told that it is next in line and when (a quantum from now), a waiting worker sleeps until
#: this long before then (a timer wakes late by up to a millisecond on a virtual machine),
#: then spins for its grant, at most READY_SPIN.
READY_MARGIN = 0.0012
READY_SPIN = 0.01
#: A worker that has waited this long for a grant with no word from the arbiter asks again
#: (the arbiter answers a holder that asks with its grant once more): a lost or crossed
#: grant would otherwise leave the session waiting for ever. Longer than any wait a
#: healthy arbiter imposes without a word (it tells the next in line when to be ready).
REASK_SECONDS = 1.0
#: While spinning for a grant, look for a cancel from the client this often (seconds).
SPIN_CANCEL_CHECK = 0.001


class DeviceLease:
    """Called only from the worker's one thread (the serve loop, the executor's pacing)."""

    def __init__(self, ctx: zmq.Context, address: str, worker_id: str,
                 baton: str | None = None) -> None:
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.IDENTITY, worker_id.encode())
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(address)
        self.holding = False
        self.asked = False
        #: whether this session is the only one attached to its device (the arbiter says so
        #: when that changes, and in every grant): the pacer keeps a long queue then
        self.alone = False
        #: whether its long replays are paced beside its company (the arbiter says not where
        #: its company is only light users: arbiter/service.py, LIGHT_COMPANY)
        self.paced = True
        #: whether it and its weighing company all keep their work backlogged: a long replay
        #: whose next message already waits is not paced (arbiter/service.py, DEEP_COMPANY)
        self.deep_company = False
        #: measured busy seconds at which to hand over (None: keep until told)
        self.hand_over_at: float | None = None
        #: hand over when the running batch ends (fifo)
        self.at_batch_end = False
        #: the grant held was taken back by a newcomer (a yield, or the baton's word), not
        #: merely come to its turn's end: what a replay run whole waits for (Pacer.atomic)
        self.preempted = False
        self._reported = 0.0
        #: the number of the grant held (or last held): releases name it, yields must match it
        self.grant: int | None = None
        #: when to be awake for a grant the arbiter said is coming (perf_counter)
        self.ready_at = -1.0
        #: the shared hand-over baton (arbiter/baton.py), this worker's slot in it, and the
        #: [slot, grant] whose work must finish before this holder launches
        self.baton = Baton(baton) if baton else None
        self._released: int | None = None   # the number of the last grant handed back
        self._asked_at = 0.0                 # when the device was last asked for
        self._reasked = False                # whether it ever asked again (see REASK_SECONDS)
        self.slot: int | None = None
        self.after: list | None = None
        #: the [slot, grant] of a last holder this one launched beside (wait_for_previous)
        self.overlapping: list | None = None
        self.patience = BATON_TIMEOUT        # ... and the longest to wait for it (seconds)
        #: the pacer's trace (GPUWB_PACING_TRACE), where the yields read are noted
        self.trace: list | None = None
        #: grants taken (not one resent): the pacer traces each, read where it may be
        self.grants = 0
        #: ``share`` (arbiter/share.py): the grant held is standing (launch beside the others
        #: until told; say when out of work), and whether this worker has said it is idle
        self.standing = False
        self.idle_said = False
        #: out of work while alone, and not said: nobody waits for it, so it says ``idle``
        #: (and then ``want``) only once the arbiter tells it of company
        self.idle_quiet = False
        #: it said ``idle`` with launched work still to run, and has not yet said ``done``
        self.tail_open = False
        #: ``share``: a standing grant given back with launched work still running says
        #: ``done`` once that work has run (``d`` in the release; GPUWB_RELEASE_DONE=0: not,
        #: the arbiter counting it off the device at its estimate, as before), and it has
        #: not said so yet
        self.release_done = True
        self.release_open = False
        #: ``share`` with a deep lead (arbiter/share.py, lead_for): the seconds of work this
        #: worker may launch ahead beside others, as the arbiter last said (None: its own)
        self.lead: float | None = None
        #: of the device time measured (``busy``), the seconds charged at replays' own
        #: costs (worker/replay_prices.py; the pacer keeps it): told with every ``busy``
        #: once any is, and not scaled by the arbiter's share of the device
        self.own = 0.0

    # ------------------------------------------------------------ messages
    def _send(self, msg: dict) -> None:
        if self.own and "busy" in msg:
            msg["own"] = self.own
        self.sock.send(packb(msg))

    def pending(self) -> bool:
        """Whether the arbiter has said something not yet read (no system call)."""
        return bool(self.sock.getsockopt(_EVENTS) & _POLLIN)   # (plain ints: see links.py)

    def read(self, busy: float) -> None:
        """Take in every arbiter message that has arrived."""
        while self.pending():
            msg = unpackb(self.sock.recv(zmq.NOBLOCK))
            kind = msg.get("t") if isinstance(msg, dict) else None
            if kind == "grant":
                number = msg.get("g")
                if type(number) is int and self._released is not None and number <= self._released:
                    continue   # a grant this worker has already handed back (sent twice)
                again = self.holding and type(number) is int and number == self.grant
                self.holding, self.asked = True, False
                if not again:
                    self.preempted = False
                    # (let go again before its released work had run: the arbiter counts it
                    # on the device from here, and a done would tell it nothing)
                    self.release_open = False
                self.alone = msg.get("a") is True
                self.paced = msg.get("p") is not False
                self.deep_company = msg.get("d") is True
                if not again:   # a grant resent (a second want crossed it) keeps its hand-over:
                    # the wait for the last holder's work, which the resent one does not name
                    self.grants += 1
                    self.grant = number if type(number) is int else None
                    slot, after = msg.get("k"), msg.get("w")
                    self.slot = slot if type(slot) is int else None
                    self.after = after if (isinstance(after, list) and len(after) == 2
                                           and all(type(v) is int for v in after)) else None
                    patience = msg.get("wt")
                    self.patience = min(float(patience), BATON_TIMEOUT) \
                        if isinstance(patience, (int, float)) and patience >= 0 else BATON_TIMEOUT
                self.standing = msg.get("s") is True
                self.lead = _lead(msg.get("l"))
                self.idle_said = self.idle_quiet = False
                quantum = msg.get("q")
                self.hand_over_at = busy + quantum if quantum is not None else None
                self.at_batch_end = bool(msg.get("b"))
                # (_reported stays: a grant tells the arbiter nothing of this worker's time.
                # Reset here, a holder granted back every few ms after preemptions never
                # reached its next report, and the arbiter, counting it as idle, let a
                # returning interactive user wait for a quantum.)
            elif kind == "company":
                self.alone = msg.get("a") is True
                self.paced = msg.get("p") is not False
                self.deep_company = msg.get("d") is True
                if "l" in msg:
                    self.lead = _lead(msg["l"])
            elif kind == "ready":
                after = msg.get("q")
                after = float(after) if isinstance(after, (int, float)) else 0.0
                self.ready_at = time.perf_counter() + max(0.0, after - READY_MARGIN)
            elif kind == "yield" and self.holding and msg.get("g") in (None, self.grant):
                self.preempted = True
                if self.trace is not None:
                    self.trace.append((time.perf_counter(), "yield", msg.get("q")))
                if msg.get("b"):
                    self.at_batch_end = True
                else:
                    due = busy + float(msg.get("q") or 0.0)
                    self.hand_over_at = due if self.hand_over_at is None else min(self.hand_over_at, due)

    # ------------------------------------------------------------ holding
    def acquire(self, busy: float, interrupted: Callable[[], bool]) -> bool:
        """Block until this worker holds the device; False if *interrupted* first (a cancel
        or the pool going away: the request stays, and a late grant is handed back).
        A holder returns at once, without asking ZeroMQ anything (the hot path)."""
        if self.holding:
            return True
        self.read(busy)
        if self.holding:
            return True
        if not self.asked:
            self._send({"t": "want"})
            self.asked = True
            self._asked_at = time.perf_counter()
        spin_until = time.perf_counter() + ACQUIRE_SPIN
        check_at = 0.0
        while True:
            now = time.perf_counter()
            if now < spin_until or 0.0 <= now - self.ready_at < READY_SPIN:   # spin: grant near
                if self.pending():
                    self.read(busy)
                    if self.holding:
                        return True
                if now >= check_at:
                    check_at = now + SPIN_CANCEL_CHECK
                    if interrupted():
                        return False
                spinning.pause()   # (a client sharing this CPU runs meanwhile)
                continue
            nap = WAIT_SLICE if now >= self.ready_at else min(WAIT_SLICE, self.ready_at - now)
            if self.sock.poll(max(nap, 0.0001) * 1000):   # sleep; a message (ready, grant) wakes it
                self.read(busy)
                if self.holding:
                    return True
            elif now - self._asked_at > REASK_SECONDS:   # nothing for a long while: ask again
                self._send({"t": "want"})
                self._asked_at = time.perf_counter()
                if not self._reasked:   # once per worker: a clue for the pool's log
                    self._reasked = True
                    print(f"gpuwb worker: no grant and no word from the arbiter for "
                          f"{REASK_SECONDS:g} s; asking again", file=sys.stderr)
            if interrupted():
                return False

    def check_preempted(self) -> None:
        """Read the arbiter's yield word for the grant held (arbiter/baton.py), ahead of its
        ``yield`` message: one read of shared memory, a fraction of a microsecond."""
        if self.holding and self.hand_over_at != 0.0 and self.baton is not None \
                and self.slot is not None and self.grant is not None \
                and self.baton.preempted(self.slot, self.grant):
            self.hand_over_at = 0.0
            self.preempted = True
            if self.trace is not None:
                self.trace.append((time.perf_counter(), "yield", 0.0, "baton"))

    def must_hand_over(self, projected_busy: float) -> bool:
        """Whether the quantum is spent, counting the work already launched, or the holder
        is preempted."""
        if not self.holding:
            return False
        self.check_preempted()
        return self.hand_over_at is not None and projected_busy >= self.hand_over_at

    def idle(self, busy: float, op: float | None = None, ahead: float = 0.0) -> None:
        """Holding a standing grant (``share``), out of work: say so once (the arbiter lets
        users held back for this one go), with the device time measured so far and *ahead*,
        the wall seconds its launched work is estimated to run still (it shares the device
        till :meth:`done`)."""
        if not (self.holding and self.standing) or (self.idle_said and not self.idle_quiet):
            return
        self.idle_said = True
        # Alone, nobody is held back for it: out of work, it says nothing (two messages a
        # batch to the arbiter, each a send of the worker's and a wake of the pool's arbiter
        # thread, for a loop that syncs; issue 50's "a lone session pays for no pacing it
        # does not need"), as a lone holder under ``fair`` says nothing. Told of company
        # while so (its idle loop reads the lease), it says ``idle`` then.
        self.idle_quiet = self.alone
        if not self.alone:
            msg = {"t": "idle", "busy": busy}
            if op is not None:
                msg["op"] = op
            if ahead > 0:
                msg["ahead"] = ahead
                self.tail_open = True
            self._send(msg)
            self._reported = busy

    def done(self, busy: float) -> None:
        """After :meth:`idle` with work launched, or a standing grant given back with work
        launched (:meth:`release`, ``d``): that work has run (measured in *busy*)."""
        owed = (self.tail_open and self.holding) or self.release_open
        self.tail_open = self.release_open = False
        if owed:   # (one done for both: the arbiter's is the same for a tail and a release)
            self._send({"t": "done", "busy": busy})
            self._reported = busy

    def busy_again(self) -> None:
        """Holding a standing grant after saying it was idle: work again, launched at once;
        the arbiter is told, not waited for (``want`` with ``h``; it ends an open tail)."""
        if self.idle_said:
            if not self.idle_quiet:
                self._send({"t": "want", "h": True})
            self.idle_said = self.tail_open = self.idle_quiet = False

    def report(self, busy: float, op: float | None = None) -> None:
        """While holding, the device time measured so far (every REPORT_SECONDS of it, or
        REPORT_ALONE_SECONDS alone), and *op*, an op's device time lately: the arbiter
        waits for no drain behind a holder inside a long kernel. A standing holder with
        company reports as often as a holder told others wait: its charge decides who is
        held back."""
        every = REPORT_ALONE_SECONDS if self.hand_over_at is None and not self.at_batch_end \
            and (self.alone or not self.standing) else REPORT_SECONDS
        if self.holding and busy - self._reported >= every:
            msg = {"t": "used", "busy": busy}
            if op is not None:
                msg["op"] = op
            self._send(msg)
            self._reported = busy

    def release(self, busy: float, want: bool, ahead: float = 0.0, op: float | None = None,
                reading: bool = False) -> None:
        """Hand the device over; with *want*, ask for it again at once (work is waiting).
        *busy*: the device time measured so far; *ahead*: the estimated device time of the
        work launched and not yet measured (the arbiter charges it until the next report
        settles it); *reading*: the batch ends with a read of that work's result and nothing
        more is queued (the arbiter keeps no device idle for this session's return: others'
        queued work fills its gap). The next holder waits for :meth:`finished` before it
        launches."""
        msg = {"t": "release", "busy": busy, "want": want, "g": self.grant}
        if ahead > 0:
            msg["ahead"] = ahead
            # (share: its launched work runs on beside the others, and it waits to be let go
            # again, where its pacer looks at that work every 1-2 ms, Pacer._acquire: done()
            # says when it has run. Out of work, it may sleep half a second before it looks:
            # counted off at the estimate then, as before)
            if self.standing and self.release_done and want:
                msg["d"] = True
                self.release_open = True
        if reading:
            msg["r"] = True
        if op is not None:
            msg["op"] = op
        self._send(msg)
        self._released = self.grant
        self.holding = False
        self.standing = self.idle_said = self.tail_open = self.idle_quiet = False
        self.asked = want
        self._asked_at = time.perf_counter()
        self.hand_over_at = None
        self.at_batch_end = False
        self._reported = busy

    def finished(self, grant: int | None, slot: int | None) -> None:
        """The work launched under *grant* is done on the device: the next holder may go."""
        if self.baton is not None and grant is not None and slot is not None:
            self.baton.finished(slot, grant)

    def wait_for_previous(self) -> bool:
        """Before a new holder's first launch: until the last holder's work has drained.
        False if it gave up waiting (the last holder sits in a long kernel, or died): the
        [slot, grant] it gave up on is kept in ``overlapping`` (see :meth:`still_overlapping`)."""
        drained = True
        self.overlapping = None
        if self.baton is not None and self.after is not None:
            drained = self.baton.wait(*self.after, timeout=self.patience)
            if not drained:
                self.overlapping = self.after
            self.after = None
        return drained

    def still_overlapping(self) -> bool:
        """Whether the last holder this one launched beside (wait_for_previous gave up on
        it) still has work on the device (one read of shared memory)."""
        if self.overlapping is None:
            return False
        if self.baton.wait(*self.overlapping, timeout=0.0):
            self.overlapping = None
            return False
        return True

    def wait(self, seconds: float) -> None:
        """Sleep up to *seconds*, waking at once if the arbiter speaks."""
        if seconds >= 0.001:
            self.sock.poll(int(seconds * 1000))
        elif not self.pending():
            time.sleep(max(seconds, 20e-6))

    def close(self) -> None:
        self.sock.close()
        if self.baton is not None:
            self.baton.close()


#: The deepest lead an arbiter may ask of a worker (seconds): anything else it says is
#: ignored (a worker trusts nothing malformed).
MAX_LEAD = 0.1


def _lead(value) -> float | None:
    """The lead an arbiter message says (``l``): seconds in (0, MAX_LEAD], else None."""
    return float(value) if type(value) in (int, float) and 0.0 < value <= MAX_LEAD else None
