"""The arbiter thread: one per pool, deciding for every device who may launch work.

It owns a ROUTER socket that the session workers' leases talk to (loopback
``ipc://`` where there is one) and one policy object per device. The front door
tells it, from its own thread, which worker serves which session and user and
what the users' weights are (:meth:`attach`, :meth:`detach`,
:meth:`set_weights`): those calls are queued and the thread applies them before
the next worker message, so a worker's first ``want`` always finds its session
attached. Status is read from :attr:`snapshot`, replaced whole by the thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
import time
from typing import Any, Callable

import zmq

from ..protocol.codec import packb, unpackb
from gpu_backend.runtime.run_dir import make_run_dir, remove_run_dir
from .baton import BatonBoard
from .choose import make_policy, own_time_markers
from .policy import PERIOD, PREEMPT_PATIENCE, QUANTUM, Grant, Policy, Ready
from .anticipation import ANTICIPATE_BATCH
from .share import FORGET_IDLE
from .trace import decision_trace

__all__ = ["Arbiter"]

log = logging.getLogger("gpu_backend.arbiter")

#: How often the status snapshot is rebuilt while messages flow (seconds).
SNAPSHOT_INTERVAL = 0.1
#: The longest a thread of the pool's process holds the GIL while the arbiter waits for it.
SWITCH_INTERVAL = 0.0005
#: A session with no work (it said it was idle, or never asked) whose worker has said nothing
#: for this many seconds is no company to the others on its device: they are told they are
#: alone (a lone worker launches LONE_LEAD ahead and says nothing at its reads). An idle
#: notebook's open session is most sessions' company; counted as company, it cost the
#: 2048² GEMM user beside it a twentieth of its rate under ``share`` (0.960 against 0.998
#: under ``none`` and 0.999 alone, H200 run 336). Its next ``want`` makes it company again
#: (``worker/lease.py``: a worker that went idle with company says ``want`` when it has work).
#: Under ``share`` only: under ``fair`` and ``fifo`` a returning session's grant would wait
#: for a lone holder's queue each time, which is not measured.
COMPANY_IDLE = 1.0
#: (The arbiter's ``light_company``, the pool's ``share_light_company``.) Under ``share`` a
#: worker whose company on its device is only sessions that do not weigh (light users by
#: their history: SharePolicy.weighs) is told so (``p``: false), and launches its long
#: replays whole through their graphs, run ahead, as alone, instead of re-running them op by
#: op paced (worker/stretch_replay.py, SHARE_UNPACED_REPLAY): pacing is there so that a user
#: held back stops within its lead, and a light user holds nobody back. Paced beside an
#: idle session forced to be company, a 2048² GEMM user lost 0.03-0.05 of its rate whatever
#: its lead (2, 4 or 16 ms) or its markers' grain (H200 run 337); beside an interactive user,
#: paced, 0.026-0.048 below its rate under ``none``, unpaced 0.012 above to 0.003 below, the
#: interactive user's p99 0.37-0.44 ms against 0.41-0.51 (run 338, three passes). Where the
#: company weighs, pacing stays: never paced, users 1:2:4 that queue deep lost their split
#: (error 8.4 % against 5.6 %) and 0.04 of the work (run 338). On by default.
#: (The arbiter's ``deep_company``, the pool's ``share_deep_company``.) Under ``share`` a
#: worker whose session is deep (it has had work without a break for DEEP_SPELL: a loop
#: that keeps its session backlogged, SharePolicy.deep) and whose weighing company is
#: all deep too is told so (``d``: true): a long replay of its whose next message is already
#: waiting is launched whole through its graphs, not paced op by op (worker/stretch_replay.py,
#: ``pacing_bound``). Users that all queue deep are held back between their batches as ever,
#: and each launched a batch at most past its share; paced, their split missed its targets in
#: every pass measured (users 1:2:4, 3.0-3.3 % mean and 8.1-9.4 % p99 at one second, H200
#: runs 338-340), where never pacing the backlogged met them (1.1-1.3 / 2.6-4.2 %, run 340),
#: and where the company waits for its values (users that sync, kinds mixed), never pacing
#: the backlogged lost their split (run 340): there pacing stays.
DEEP_COMPANY = True


class Arbiter:
    def __init__(self, ctx: zmq.Context, policy: str, devices: list[str],
                 clock: Callable[[], float] = time.monotonic, quantum: float = QUANTUM,
                 period: float = PERIOD, run_dir: str | None = None,
                 preempt_patience: float = PREEMPT_PATIENCE, trace: str | None = None,
                 patience_by_op: bool = True, gap_rule: bool = True,
                 window: float | None = None, fill: bool = False, deep_lead: float = 0.0,
                 light_gap: float = 0.0, gap_charge: float = 0.0,
                 forget_idle: float = FORGET_IDLE, assume_silent: bool = False,
                 company_idle: float = COMPANY_IDLE, light_company: bool = True,
                 deep_company: bool = DEEP_COMPANY,
                 anticipate_batch: float = ANTICIPATE_BATCH) -> None:
        self.ctx = ctx
        #: how long a session with no work may stay silent and still be company
        #: (COMPANY_IDLE; 0, and under every policy but ``share``: every session attached is
        #: company, as before run 336)
        self.company_idle = company_idle if policy == "share" else 0.0
        #: whether a worker's long replays are launched whole where its company does not
        #: weigh (LIGHT_COMPANY; ``share`` only: Policy.weighs is True under the others)
        self.light_company = light_company and policy == "share"
        #: whether a deep worker among deep company launches its backlogged long replays
        #: whole (DEEP_COMPANY; ``share`` only: Policy.deep is False under the others)
        self.deep_company = deep_company and policy == "share"
        self.clock = clock
        self.policy = policy
        self.policies: dict[str, Policy] = {}
        for device in devices:
            made = make_policy(policy, clock, quantum, period, preempt_patience, patience_by_op,
                               gap_rule, window, own_time=own_time_markers(device), fill=fill,
                               deep_lead=deep_lead, light_gap=light_gap, gap_charge=gap_charge,
                               forget_idle=forget_idle, assume_silent=assume_silent,
                               anticipate_batch=anticipate_batch)
            if made is None:
                raise ValueError("the 'none' policy has no arbiter")
            self.policies[device] = made
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        # the pool's private run directory (0700: no other local user reaches the socket
        # or the baton); one of its own when made alone (tests), removed at stop
        self._own_dir = run_dir is None
        self._dir = make_run_dir() if run_dir is None else run_dir
        #: the hand-over baton the workers share (its path goes to each worker at its start)
        self.board = BatonBoard(os.path.join(self._dir, "baton"))
        self.baton_path = self.board.path
        self._slot: dict[str, int] = {}                 # worker's lease id -> its baton slot
        # (ipc only: a loopback port would be open to every local user; the workers' lease
        # ids are secrets the pool learns over their control channels, so a peer that
        # reached the socket still could not speak for a worker)
        self.address = f"ipc://{self._dir}/arbiter"
        self.sock.bind(self.address)
        self._wake_address = f"inproc://gpuwb-arbiter-{id(self)}"
        self._wake_rx = ctx.socket(zmq.PULL)
        self._wake_rx.bind(self._wake_address)
        self._wake_tx: zmq.Socket | None = None   # made in the caller's thread on first use
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._where: dict[str, tuple[str, str]] = {}   # worker id -> (device, session)
        self._worker_of: dict[str, str] = {}            # session -> worker id
        self._lead_of: dict[str, float | None] = {}     # worker id -> the lead it was told
        self._alone_of: dict[str, bool] = {}            # worker id -> whether told it is alone
        self._paced_of: dict[str, bool] = {}            # worker id -> whether told to pace replays
        self._deep_of: dict[str, bool] = {}             # worker id -> whether told its company is deep
        self._heard_at: dict[str, float] = {}           # worker id -> its last message (or attach)
        #: each device's workers; those counted as company at their device's last count; and
        #: per device, when one of them may stop counting (its count is made again then)
        self._on_device: dict[str, set[str]] = {}
        self._company: set[str] = set()
        #: of those, the ones whose session weighs (Policy.weighs; all of them unless
        #: ``light_company``)
        self._weighing: set[str] = set()
        #: ... and of those, the ones whose session is deep (Policy.deep; none unless
        #: ``deep_company``)
        self._deep: set[str] = set()
        self._company_due: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpuwb-arbiter", daemon=True)
        self._snapshot_at = 0.0
        #: per device: the policy's snapshot (users' weights, virtual times, waiting)
        self.snapshot: dict[str, Any] = {}
        #: *trace* (the pool's arbiter_trace, GPUWB_ARBITER_TRACE=FILE): every decision as a
        #: JSON line (arbiter/trace.py); None: none kept
        self.trace = decision_trace(trace)

    # ------------------------------------------------------------ the pool's calls
    def start(self) -> "Arbiter":
        # The arbiter shares its process's GIL with the front door (and, in an embedded pool,
        # with the user's kernel). A thread that wakes for a message may wait for the GIL up
        # to the switch interval, 5 ms by default: a grant would wait that long.
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
        self._thread.start()
        return self

    def _command(self, *command: Any) -> None:
        self._commands.put(command)
        if self._wake_tx is None:
            self._wake_tx = self.ctx.socket(zmq.PUSH)
            self._wake_tx.setsockopt(zmq.LINGER, 0)
            self._wake_tx.connect(self._wake_address)
        self._wake_tx.send(b"", zmq.NOBLOCK)

    def attach(self, worker: str, device: str, session: str, user: str, weight: float) -> None:
        """The worker whose lease id is *worker* now serves *session* of *user* on *device*
        (called before the hello reply). The lease id is the worker's ZeroMQ identity here,
        a secret it told the pool over its control channel."""
        self._command("attach", worker, device, session, user, weight)

    def detach(self, worker: str) -> None:
        """*worker*'s session ended (closed, expired, worker died)."""
        self._command("detach", worker)

    def set_weights(self, weights: dict[str, float]) -> None:
        """New weights from a users-file reload; the next decision uses them."""
        self._command("weights", dict(weights))

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is None:   # (never started: its sockets are closed here, not
            self.sock.close()            # by its thread; a test that steps it by hand)
            self._wake_rx.close()
            if self.trace is not None:
                self.trace.close()
        else:
            try:
                self._command("stop")
            except zmq.ZMQError:
                pass
            self._thread.join(5)
        if self._wake_tx is not None:
            self._wake_tx.close()
        self.board.close()
        if self._own_dir:
            remove_run_dir(self._dir)
        else:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, "arbiter"))

    # ------------------------------------------------------------ the thread
    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self._wake_rx, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                deadlines = [d for p in self.policies.values() if (d := p.next_deadline()) is not None]
                deadlines.extend(d for d in self._company_due.values() if d != float("inf"))
                timeout = 1000.0
                if deadlines:
                    timeout = max(0.0, min(deadlines) - self.clock()) * 1000
                events = dict(poller.poll(max(1, int(timeout + 0.999)) if timeout else 0))
                if self._wake_rx in events:
                    while self._wake_rx.poll(0):
                        self._wake_rx.recv()
                self._apply_commands()
                if self.sock in events:
                    while self.sock.poll(0):
                        self._on_worker()
                for device, policy in self.policies.items():
                    deadline = policy.next_deadline()
                    due = deadline is not None and deadline <= self.clock()
                    actions = policy.tick()
                    if actions and self.trace is not None:   # (a deadline's decisions too)
                        self.trace.decided("", None, {"t": "tick"}, actions, None,
                                           {u.name: u.vt for u in policy.users.values()})
                    if due:   # (before the grants: they say the standing too)
                        self._count_standing_changes(device, policy)
                    self._send(actions)
                self._count_company_due()
                self._refresh_snapshot()
        except Exception:  # the arbiter must never take the pool down silently
            log.exception("the arbiter stopped")
        finally:
            self.sock.close()
            self._wake_rx.close()
            if self.trace is not None:
                self.trace.close()

    def _apply_commands(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            kind = command[0]
            if kind == "attach":
                _, worker, device, session, user, weight = command
                policy = self.policies.get(device)
                if policy is not None:
                    self._where[worker] = (device, session)
                    self._worker_of[session] = worker
                    slot = self.board.take()
                    if slot is not None:
                        self._slot[worker] = slot
                    policy.attach(session, user, weight)
                    self._heard_at[worker] = self.clock()
                    self._on_device.setdefault(device, set()).add(worker)
                    self._tell_company(device)
            elif kind == "detach":
                place = self._where.pop(command[1], None)
                slot = self._slot.pop(command[1], None)
                self._lead_of.pop(command[1], None)
                self._alone_of.pop(command[1], None)
                self._paced_of.pop(command[1], None)
                self._deep_of.pop(command[1], None)
                self._weighing.discard(command[1])
                self._deep.discard(command[1])
                self._heard_at.pop(command[1], None)
                self._company.discard(command[1])
                if slot is not None:
                    self.board.give_back(slot)
                if place is not None:
                    device, session = place
                    self._on_device.get(device, set()).discard(command[1])
                    self._worker_of.pop(session, None)
                    policy = self.policies[device]
                    actions = policy.detach(session)
                    self._tell_company(device)   # (before the grants: they say it too)
                    self._send(actions)
            elif kind == "weights":
                for device, policy in self.policies.items():
                    for user, weight in command[1].items():
                        policy.set_weight(user, weight)
                    self._tell_company(device)
            self._snapshot_at = 0.0

    def _is_company(self, worker: str, now: float) -> tuple[bool, float]:
        """Whether *worker*'s session counts as company to the others on its device, and
        until when at least: it has work (it asked, or holds the device: looked at again
        within ``company_idle``, for its work may end without a word of its own, a read's
        tail counted out at its estimate), or its worker spoke within ``company_idle`` (a
        newcomer from its attach)."""
        if not self.company_idle:
            return True, float("inf")
        device, session = self._where[worker]
        known = self.policies[device].sessions.get(session)
        if known is not None and known.runnable:
            return True, now + self.company_idle
        until = self._heard_at.get(worker, now) + self.company_idle
        return now < until, until

    def _tell_company(self, device: str) -> None:
        """Count *device*'s company again, and tell each of its workers whose standing
        changed whether it is alone and the lead it launches with (a ``company`` message).
        A lone worker keeps a long queue of launched work (worker/pacing.py, LONE_LEAD) and
        says nothing at its reads; one with company keeps its lead (``share``'s heaviest
        users a deep one: Policy.lead_for) and says ``idle`` and ``want``, so that a
        newcomer never waits behind it. A session with no work silent for ``company_idle``
        is no company (COMPANY_IDLE); a worker is told it has company by the session that
        is (its ``want``, its attach), before that session's grant. Grants say it too
        (``a``): a worker told before its lease was connected learns it from its first
        grant. With ``light_company``, a worker whose company does not weigh (Policy.weighs:
        light users only) is told not to pace its long replays (``p``: LIGHT_COMPANY); with
        ``deep_company``, a deep worker whose weighing company is all deep is told so (``d``:
        DEEP_COMPANY). The device's workers alone are looked at."""
        now = self.clock()
        policy = self.policies[device]
        here = self._on_device.get(device, set())
        company, due = set(), float("inf")
        for worker in here:
            counted, until = self._is_company(worker, now)
            if counted:
                company.add(worker)
                due = min(due, until)
        alone = {w: len(company) - (w in company) == 0 for w in here}
        for worker in here:   # (one told it was alone said no idle at its reads meanwhile)
            if self._alone_of.get(worker) is True and not alone[worker]:
                policy.company_began(self._where[worker][1])
        weighing = {w for w in company if policy.weighs(self._where[w][1])} \
            if self.light_company else company
        deep = {w for w in weighing if policy.deep(self._where[w][1])} \
            if self.deep_company else set()
        self._company.difference_update(here)
        self._company.update(company)
        self._weighing.difference_update(here)
        self._weighing.update(weighing)
        self._deep.difference_update(here)
        self._deep.update(deep)
        self._company_due[device] = due
        for worker in here:
            paced = len(weighing) - (worker in weighing) > 0
            # (its weighing company all deep, and itself: len(weighing - deep) == 0)
            deep_among = paced and worker in deep and len(weighing) == len(deep)
            lead = policy.lead_for(self._where[worker][1])
            if self._alone_of.get(worker) != alone[worker] or self._lead_of.get(worker) != lead \
                    or self._paced_of.get(worker, True) != paced \
                    or self._deep_of.get(worker, False) != deep_among:
                self._alone_of[worker], self._lead_of[worker] = alone[worker], lead
                self._paced_of[worker] = paced
                self._deep_of[worker] = deep_among
                msg = {"t": "company", "a": alone[worker], "l": lead}
                if self.light_company:
                    msg["p"] = paced
                if self.deep_company:
                    msg["d"] = deep_among
                self._to_worker(worker, packb(msg))

    def _count_company_due(self) -> None:
        """The devices where a session counted as company may have stopped being company
        (silent past ``company_idle`` with no work): their company counted again."""
        now = self.clock()
        for device, due in list(self._company_due.items()):
            if due <= now:
                self._tell_company(device)

    def _count_standing_changes(self, device: str, policy: Any) -> None:
        """After one of *device*'s policy's deadlines: its company counted again where a
        session's standing changed with no word from its worker (a light user's batch run
        past its light burst, with ``light_company``: the workers beside a light user's
        long batch are paced as soon as it holds them back, not only once its batch has
        ended; a session's deepness, with ``deep_company``), before the deadline's grants
        go out. (A worker's own message looks at its session's standing itself:
        :meth:`_standing_changed`.)"""
        if not (self.light_company or self.deep_company):
            return
        for worker in self._on_device.get(device, ()):
            if worker in self._company and self._standing_changed(worker, policy, self._where[worker][1]):
                self._tell_company(device)
                return

    def _standing_changed(self, worker: str, policy: Any, session: str) -> bool:
        """Whether *worker*'s session must be counted again among its device's company: not
        counted yet, or (with ``light_company``) its weighing, or (with ``deep_company``) its
        deepness, is not what the last count found. A session turns deep with no event of
        its own, a spell's length after it came back (Policy.deep): its worker reports every
        millisecond of device time while it has company (worker/lease.py, REPORT_SECONDS),
        so its next report finds it; it turns shallow at its own ``idle``."""
        if worker not in self._company:
            return True
        if self.light_company and policy.weighs(session) != (worker in self._weighing):
            return True
        return self.deep_company and policy.deep(session) != (worker in self._deep)

    def _to_worker(self, worker: str, msg: bytes) -> None:
        try:
            self.sock.send_multipart([worker.encode(), msg], zmq.NOBLOCK)
        except zmq.ZMQError:   # the worker is gone; the pool detaches it when it reaps it
            pass

    def _on_worker(self) -> None:
        frames = self.sock.recv_multipart()
        if len(frames) != 2:
            return
        worker = frames[0].decode(errors="replace")
        place = self._where.get(worker)
        if place is None:
            return   # a worker not (or no longer) serving a session: nothing to decide
        device, session = place
        policy = self.policies[device]
        now = self._heard_at[worker] = self.clock()
        # (a deadline of the policy's already passed: this message's settling takes it, so
        # the standing it may have changed is counted here, not by the loop's look at the
        # deadlines, which finds it gone; a light user's burst ended, say)
        deadline = policy.next_deadline()
        was_due = deadline is not None and deadline <= now
        try:
            msg = unpackb(frames[1])
            kind = msg.get("t")
            if "own" in msg:   # (with a busy: the part of it charged at replays' own costs)
                policy.own_seconds(session, msg["own"])
            # what the policy believed when a session asked (the trace's why; off by default)
            before = policy.snapshot() if self.trace is not None and kind == "want" else None
            if kind == "want":
                actions = policy.want(session, holding=True) if msg.get("h") is True \
                    else policy.want(session)
            elif kind == "idle":
                policy.op_seconds(session, msg.get("op"))
                actions = policy.idle(session, float(msg["busy"]), float(msg.get("ahead") or 0.0))
            elif kind == "done":
                actions = policy.done(session, float(msg["busy"]))
            elif kind == "used":
                policy.op_seconds(session, msg.get("op"))
                actions = policy.used(session, float(msg["busy"]))
            elif kind == "release":
                policy.op_seconds(session, msg.get("op"))
                grant = msg.get("g")
                actions = policy.release(session, float(msg["busy"]), bool(msg.get("want")),
                                         grant if type(grant) is int else None,
                                         float(msg.get("ahead") or 0.0),
                                         reading=msg.get("r") is True,
                                         done_follows=msg.get("d") is True)
            else:
                return
        except (ValueError, TypeError, KeyError, AttributeError):
            log.warning("malformed arbiter message from the worker of session %s", session)
            return
        if self.trace is not None:
            known = policy.sessions.get(session)
            self.trace.decided(session, known.user if known else None, msg, actions, before,
                               {u.name: u.vt for u in policy.users.values()})
        # (company again: the others told before its grant. One that ran out of work needs
        # nothing here: its device's next count, due within company_idle of the last while it
        # had work, finds it silent from this message and counts again when that runs out)
        # (with light_company, one whose user's history turned light or heavy is counted
        # again too: Policy.weighs)
        if self._standing_changed(worker, policy, session):
            self._tell_company(device)
        elif was_due:
            self._count_standing_changes(device, policy)
        self._send(actions)

    def _send(self, actions: list) -> None:
        for action in actions:
            worker = self._worker_of.get(action.session)
            if worker is None:
                continue
            if isinstance(action, Grant):
                device = self._where[worker][0]
                msg = {"t": "grant", "q": action.quantum, "b": action.batch_end, "g": action.grant,
                       "k": self._slot.get(worker), "a": self._alone_of.get(worker, True)}
                if self.light_company:
                    msg["p"] = self._paced_of.get(worker, True)
                if self.deep_company:
                    msg["d"] = self._deep_of.get(worker, False)
                if action.standing:
                    msg["s"] = True
                    lead = self._lead_of[worker] = self.policies[device].lead_for(action.session)
                    if lead is not None:
                        msg["l"] = lead
                if action.after is not None:   # wait for that grant's work to drain first
                    previous = self._worker_of.get(action.after[0])
                    if previous is not None and previous in self._slot:
                        msg["w"] = [self._slot[previous], action.after[1]]
                        if action.patience is not None:
                            msg["wt"] = action.patience
            elif isinstance(action, Ready):
                msg = {"t": "ready", "q": action.after}
            else:
                msg = {"t": "yield", "q": action.after, "b": action.batch_end, "g": action.grant}
                if action.preempts and worker in self._slot:
                    self.board.preempt(self._slot[worker], action.grant)   # read at once (baton.py)
            self._to_worker(worker, packb(msg))

    def _refresh_snapshot(self) -> None:
        now = self.clock()
        if now - self._snapshot_at >= SNAPSHOT_INTERVAL:
            self.snapshot = {device: policy.snapshot() for device, policy in self.policies.items()}
            self._snapshot_at = now
