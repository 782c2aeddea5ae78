"""The pool's front door: authentication, placement, warm workers and leases.

A single-threaded loop over the clients' ROUTER socket (the listen address) and
one private control channel per worker (a socket pair the worker inherits:
:mod:`gpu_backend.worker.control`). It is not on the hot path: once a client has
its worker's address, ops go straight to the worker.

Placement puts a new session on the device with the fewest sessions (then the
least memory in use). Each device keeps ``spare_workers`` workers started and
warm, so a hello is answered as soon as the worker is told its session key.
A session whose client stops heartbeating for ``lease_timeout`` seconds has
its worker killed, which frees all of its device memory with the process.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any

import zmq

from gpu_backend.accounting.accounts import MIN_GRANT, Accounts
from gpu_backend.door.auth_gate import LOG_EVERY, AuthGate, HeldRefusals
from gpu_backend.door.client_requests import ClientRequests, MalformedLog
from gpu_backend.config import PoolSettings
from gpu_backend.hosts.device_samples import DeviceSampler
from gpu_backend.door.placement import devices_apart_from, least_loaded
from gpu_backend.door.pool_status import build_status, note_activity
from gpu_backend.devices import parse_devices
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.errors import QuotaExceededError, SessionLostError
from gpu_backend.security import secure_server, server_keys_for
from gpu_backend.door import same_host
from gpu_backend.accounting.usage import UsageLog
from gpu_backend.accounting.users import User, UserRegistry
from gpu_backend.hosts.pool_workers import Worker
from gpu_backend.hosts.worker_host import CHANNEL_CLOSED, WorkerHost
from gpu_backend.multihost.across_hosts import AcrossHosts
from gpu_backend.hosts.collection import Hosts
from gpu_backend.door.session_records import EndedSessions, PendingHello, Session
from gpu_backend.door.admin import AdminSocket
from gpu_backend.door.listener import bind_clients
from gpu_backend.door.moves import Moves, carried_usage
from gpu_backend.door.rebalance import Rebalancer
from gpu_backend.door.restarts import keeps_sessions, park_all, sweep_orphans
from gpu_backend.door.restarts import restore as restore_parked
from gpu_backend.door.session_workers import SessionWorkers
from gpu_backend.door.swap_broker import SwapBroker
from gpu_backend.door.reclaims import Reclaims
from gpu_backend.door.spares import Spares

__all__ = ["FrontDoor"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: ends the log need not say one by one: a close its worker heard before the door did (the
#: worker's reason), the pool's own stop, a stop the door ordered (said where ordered)
QUIET_ENDS = frozenset({"closed by the client", "the pool stopped", "stopped by the pool"})

#: How long a hello may wait for a warm worker before it is refused.
HELLO_TIMEOUT = 120.0
#: The largest request the front door reads (bytes; a hello is a few hundred).
MAX_REQUEST_BYTES = 1 << 16
#: How often the users file is looked at for changes (seconds).
RELOAD_INTERVAL = 1.0
#: The figures of a worker's usage report (protocol.messages.ControlUsage; docs/fair-share.md,
#: "Accounting"), kept per session.
USAGE_FIELDS = tuple(name for name in m.fields_of(m.ControlUsage) if name != "t")


class FrontDoor(SessionWorkers, ClientRequests):
    """Serve the pool until :meth:`stop` is called (from any thread)."""

    def __init__(self, settings: PoolSettings) -> None:
        self.settings = settings
        # off loopback, no key file: refused here, before any socket is bound
        keys = server_keys_for(settings.host, settings.key_file)
        if settings.users_file is not None:
            registry = UserRegistry.from_file(settings.users_file)
            #: the shared token of single-token mode (None with a users file)
            self.token: str | None = None
        else:
            self.token = settings.resolved_token()
            registry = UserRegistry.single(self.token)
        self.accounts = Accounts(registry, settings.memory_limit)
        #: token checks: scrypt off this loop, back-off on failures (auth_gate.py)
        self.auth = AuthGate(registry)
        #: accounting: the usage log (a file with --usage-log) and the live shares
        self.usage = UsageLog(settings.usage_log)
        self._reload_at = time.monotonic() + RELOAD_INTERVAL
        #: the hosts whose workers serve the sessions: this one, or those of a cluster
        self.hosts = Hosts()
        own_devices = parse_devices(settings.devices) if settings.cluster is None else []
        #: each device's busy time and memory (NVML's too, on a GPU) over the last minutes
        self.samples = DeviceSampler(own_devices)
        self.ctx = zmq.Context()
        # libzmq's ZMQ_ZERO_COPY_RECV (10; pyzmq has no name for it) off: a request not yet read
        # held the whole 8 KiB buffer it came in, and a flood's queues took 60 MB so (issue 49)
        self.ctx.set(10, 0)
        self.clients = self.ctx.socket(zmq.ROUTER)
        self.clients.setsockopt(zmq.LINGER, 0)
        # a front-door request is a small map (a hello, a heartbeat, a status): a peer that
        # sends more than this in one message is disconnected by libzmq before it is held
        self.clients.setsockopt(zmq.MAXMSGSIZE, MAX_REQUEST_BYTES)
        if keys is not None:
            secure_server(self.clients, keys)
        allow_ipv6(self.clients, settings.listen)
        #: the tcp listening socket, held by the pool so that a restart keeps the port
        #: (listener.py); None where libzmq bound alone
        port, self.listener = bind_clients(self.clients, settings.host, settings.port)
        self.address = f"tcp://{settings.host}:{port}"
        #: the same front door for clients on this host (``ipc://``), or None
        self.ipc_dir = (same_host.make_dir(settings.host, port)
                        if settings.same_host and same_host.available() else None)
        self.local_address = (same_host.bind(self.clients, self.ipc_dir, "door")
                              if self.ipc_dir else None)
        #: the loop's poller (the clients' socket and every worker's control channel)
        self.poller = zmq.Poller()
        self.poller.register(self.clients, zmq.POLLIN)
        self.poller.register(self.auth.wake_fd, zmq.POLLIN)
        #: moves and drains asked by the pool's own OS user (admin.py), beside the ipc door
        self.admin = AdminSocket(self, self.ctx, self.ipc_dir) if self.ipc_dir else None
        if self.admin is not None:
            self.poller.register(self.admin.sock, zmq.POLLIN)
        #: a pool across hosts: its agents' socket, Ray, hosts joining and lost
        #: (across_hosts.py; docs/cluster.md); None: this host's devices only
        self.cluster = AcrossHosts(self, keys) if settings.cluster is not None else None
        if self.cluster is None:   # this host's workers, with what they share here: run
            # directory, spin slots, arbiter, zygotes (worker_host.py)
            self.hosts.add("", WorkerHost(self.ctx, settings, own_devices, self.ipc_dir,
                                          self.poller))
        self.sessions: dict[str, Session] = {}
        self.pending: list[PendingHello] = []
        #: throttled sign-ins' refusals, held until their wait is over (auth_gate's tarpit)
        self.held = HeldRefusals()
        #: requests waiting for memory the user's other sessions hand back (reclaims.py)
        self.reclaims = Reclaims()
        #: which sessions go out to swap, idle or for another's memory (swap_broker.py)
        self.swaps = SwapBroker(settings, self.sessions, self.reclaims, self.hosts.of,
                                leaving=lambda device: self.moves.leaving(device))
        self._stop = threading.Event()
        #: the warm spare workers: started, given up on when late, a failing device rested
        self.spares = Spares(self.hosts, settings.spare_workers, settings.ready_timeout)
        #: sessions moving to another device, and devices being drained (moves.py)
        self.moves = Moves(self)
        self.rebalancer = (Rebalancer(self, settings.rebalance_idle)
                           if settings.rebalance_idle is not None else None)
        #: asked to restart (``gpuwb-backend restart``): the serving command starts again
        self.restart_requested = False
        #: whether a stop parks the sessions for the next pool (``serve``'s SIGTERM and
        #: ``restart`` set it; an embedded pool's stop ends them: restarts.py)
        self.park_at_stop = False
        #: run by ``gpuwb-backend serve``, which starts again after ``restart`` (an embedded
        #: pool is not)
        self.restartable = False
        restore_parked(self, Session)   # (the sessions the last pool parked: restarts.py)
        sweep_orphans(self)   # (and what a killed one's workers left in the swap directory)
        #: the last sessions that ended: their summaries, and why, for their own clients
        self.ended = EndedSessions()
        self.started = time.time()
        self._reload_requested = False
        #: front-door requests by type and refusals by error class (for the metrics)
        self.request_counts: dict[str, int] = {}
        self.error_counts: dict[str, int] = {}
        #: malformed requests refused, said in the log at most every LOG_EVERY seconds
        self.malformed = MalformedLog(every=LOG_EVERY)
        #: what the metrics server reads: published by the loop once a second, then
        #: replaced whole (a scrape's thread never reads the loop's live tables)
        self.published: dict | None = None
        self._published_at = 0.0
        self.metrics_server = None
        if settings.metrics_port is not None:
            from gpu_backend.door.metrics import serve_metrics   # (prometheus_client: only when asked for)
            self.metrics_server = serve_metrics(lambda: self.published, settings.metrics_port,
                                                settings.metrics_address)

    @property
    def devices(self) -> list[str]:
        """Every device of the pool (of every host that has joined, across hosts)."""
        return self.hosts.devices

    @property
    def host(self) -> WorkerHost | None:
        """This host's workers (a single-host pool), or None (across hosts)."""
        return self.hosts.get("")

    # ------------------------------------------------------------ workers
    def _keep_spares(self, force: bool = False) -> None:
        """Start the spares each device lacks (spares.py)."""
        self.spares.keep([*(hello.device for hello in self.pending),
                          *self.moves.waiting_devices()], force)

    def keep_spares_for(self, device: str) -> None:
        """A session waits for a spare of *device* (a move, moves.py)."""
        self._keep_spares(force=True)

    def on_control(self, worker: Worker) -> None:
        """*worker*'s messages (restarts.py reads them while the sessions park)."""
        self._on_control(worker)

    def _on_control(self, worker: Worker) -> None:
        """Every message *worker* has sent; its channel's end means the worker is ending."""
        host = self.hosts.of(worker.device)
        if host is None:   # (its host was lost: its session has ended)
            return
        for msg in host.messages(worker):
            if msg is CHANNEL_CLOSED:   # it has ended (its process exits): so has its session
                if worker.session is None:
                    self.moves.lender_lost(worker)
                elif not self.moves.adopter_lost(worker):
                    self._end(worker.session, worker.session.usage.get("reason") or "worker ended")
                return
            try:
                self._control_message(worker, msg)
            except Exception:  # a worker's malformed report must not stop the pool
                log.exception("bad control message from worker %s", worker.wid)

    def _control_message(self, worker: Worker, msg: dict) -> None:
        kind = msg.get("t")
        if kind == "ready" and worker.given_up:   # (too late: it is being ended)
            worker.end()
        elif kind == "ready":
            worker.port = int(msg["port"])
            worker.ipc = msg.get("ipc") if isinstance(msg.get("ipc"), str) else None
            worker.info = msg.get("info") or {}
            worker.runtime = msg.get("runtime") or {}
            worker.lease_id = msg.get("lease") if isinstance(msg.get("lease"), str) else ""
            # (its host's memory: the default host budget for swapped sessions, swap_broker)
            worker.host_memory = msg["host_memory"] if type(msg.get("host_memory")) is int else 0
            self.spares.ready(worker.device)
            self._serve_pending()
        elif kind == "grow" and worker.session is not None:
            self._answer_grow(worker, int(msg["want"]))
        elif kind == "grant" and worker.session is not None:   # memory handed back
            if type(msg.get("bytes")) is int:
                worker.session.grant = msg["bytes"]
            self._serve_reclaims(worker.wid)
        elif kind == "usage" and worker.session is not None:
            session = worker.session
            note_activity(session, msg)   # (its idle time, its last OutOfMemoryError)
            session.usage.update(carried_usage(session, {k: msg.get(k) for k in USAGE_FIELDS
                                                         if k in msg}))
            self.usage.report(session.sid, session.user, session.worker.device, session.usage)
        elif kind == "room" and worker.session is not None:   # its device's memory is full
            self.swaps.make_room(worker, int(msg.get("want") or 0))
        elif kind == "elsewhere" and worker.session is not None:   # ... and stays full
            self.moves.elsewhere(worker.session, msg.get("want"))
        elif kind == "swap_due" and worker.session is not None:   # idle for --swap-idle
            self.swaps.let_go(worker.session, int(msg.get("bytes") or 0))
        elif kind == "swapped" and worker.session is not None:
            self.swaps.swapped(worker.session, msg)
            self._serve_reclaims(worker.wid)   # (a session that asked for room may go on)
        elif kind == "parked":   # (a move: the session's worker has written it out)
            self.moves.parked(worker, msg)
        elif kind == "adopted":   # (... and the new one has taken it over, or could not)
            self.moves.adopted(worker, msg)
        elif kind == "ended" and worker.session is not None:
            session = worker.session
            session.usage.update(carried_usage(session, {k: msg[k] for k in (*USAGE_FIELDS, "reason")
                                                         if k in msg}))
            self.usage.report(session.sid, session.user, session.worker.device, session.usage)
            log.info("worker %s ended: %s", worker.wid, msg.get("reason"))
        elif kind == "ended":
            log.info("worker %s ended: %s", worker.wid, msg.get("reason"))

    def _reap(self) -> None:
        """Forget workers whose process has exited; end their sessions."""
        for worker, code in self.hosts.exited():
            self.spares.changed()
            self._on_control(worker)   # its last reports first (usage, why it ended)
            if worker.session is not None:
                self._end(worker.session, worker.session.usage.get("reason") or f"worker exited ({code})")
            elif worker.port is None and not worker.given_up:   # (given up on: counted then)
                self.spares.failed_start(worker.device)
                log.error("worker for %s exited (code %s) before it was ready", worker.device, code)

    def _end(self, session: Session, reason: str) -> None:
        """Forget a session and keep its summary in ``status()["ended"]`` (the last 50). One
        its client did not close (its worker killed, its lease expired, its host lost, its
        user removed) is said in the log, why and whose: the pool's log said nothing of such
        ends, which only the session's own heartbeat heard (docs/fair-share.md, "The lost
        session found")."""
        if self.sessions.pop(session.sid, None) is None:
            return
        if not session.closing and reason not in QUIET_ENDS:
            log.warning("session %s of %s ended: %s", session.sid, session.user, reason[:300])
        self.usage.close_session(session.sid, reason, session.usage)
        if session.worker.session is session:   # (not a parked session's old worker)
            arbiter = self.hosts.arbiter_of(session.worker.device)
            if arbiter is not None:
                arbiter.detach(session.worker.lease_id)
        self.ended.add(session, reason)
        self.moves.forget(session)

    def _end_and_stop(self, session: Session, reason: str) -> None:
        """End a session the pool decided to end (its user, a removed user, a lapsed lease)
        and stop its worker."""
        self._end(session, reason)
        if session.worker.session is session:
            session.worker.end()

    end_session = _end_and_stop

    # ------------------------------------------------------------ hosts joining and leaving
    # (a pool across hosts: across_hosts.py calls these from the loop, as its agents and
    # Ray's watcher report; the tables they change stay the front door's)
    def host_joined(self, host: Any) -> None:
        """*host* (a RemoteHost whose agent has joined) serves from now on: its devices
        take sessions once its spares, started now, are ready."""
        self.hosts.add(host.name, host)
        self.samples.set_devices(self.devices)
        self._keep_spares(force=True)

    def host_lost(self, name: str, why: str) -> Any | None:
        """Host *name* has left the pool, *why*: its sessions end and the hellos waiting for
        its workers are refused, saying so. The host removed (None: no host of that name)."""
        host = self.hosts.get(name)
        if host is None:
            return None
        self.hosts.remove(name)
        host.lost()
        reason = f"host {name} was lost: {why}"
        for worker, _ in host.exited():
            if worker.session is not None:
                self._end(worker.session, reason)
        for hello in [p for p in self.pending if p.device in host.devices]:
            self.pending.remove(hello)
            self._error(hello.ident, SessionLostError(f"{reason}; open the session again"))
        self.spares.forget(host.devices)
        self.samples.set_devices(self.devices)
        log.warning("%s; %d hosts remain", reason, len(self.hosts))
        return host

    def worker_spoke(self, worker: Worker) -> None:
        """A worker of another host has news (its agent relayed it): read as a local one's."""
        self._on_control(worker)

    def _hello_as(self, ident: bytes, msg: dict, user: User, reclaimed: bool = False) -> None:
        taken = devices_apart_from(self.sessions, self.devices, user.name, msg.get("apart_from"))
        # (placed before the quota is charged: a refusal holds nothing)
        # (a device whose workers fail to start is passed by while it rests, where another
        # will do: spares.py)
        devices = [d for d in self.devices if self.spares.resting(d) is None
                   and d not in self.moves.draining] or self.devices
        device = least_loaded(devices, self.sessions.values(), self.pending,
                              self.settings.max_sessions_per_device, taken)
        try:
            limit, grant = self.accounts.open_session(
                user, [*self.sessions.values(), *self.pending], msg.get("memory_limit"))
        except QuotaExceededError as exc:
            # the quota is held by the user's other sessions: those that hold more than they
            # use are asked to hand it back, and the hello waits for them (once)
            asked = set() if reclaimed or not getattr(exc, "memory_held", False) \
                else self._reclaim_from(user.name)
            if not asked:
                raise
            self.reclaims.wait(asked, lambda: self._hello_as(ident, msg, user, reclaimed=True), ident)
            return
        client = msg.get("user") if isinstance(msg.get("user"), str) else ""
        label = msg.get("label") if isinstance(msg.get("label"), str) else ""
        self.pending.append(PendingHello(ident, user, client[:64], limit, grant, device,
                                         label=label[-160:],
                                         apart=tuple(msg.get("apart_from") or ())))
        self._serve_pending()

    def _answer_grow(self, worker: Worker, want: int, reclaimed: bool = False) -> None:
        """A worker's session needs *want* bytes in all: grant what the user's quota allows,
        first asking the user's other sessions for memory they hold and do not use."""
        session = worker.session
        if session is None or not self.hosts.has(worker):
            return
        granted, why = self.accounts.grow(session, want, self.sessions.values())
        if why is not None and not reclaimed:
            asked = self._reclaim_from(session.user, besides=session)
            if asked:
                self.reclaims.wait(asked, lambda: self._answer_grow(worker, want, reclaimed=True))
                return
        worker.tell({"t": "granted", "bytes": granted, "why": why})

    def _reclaim_from(self, user: str, besides: Session | None = None) -> set[str]:
        """Ask each open session of *user* (but *besides*) that holds some of their quota to
        hand back what it does not use (its worker knows; the usage it last reported may be
        half a second old); the workers asked."""
        asked = set()
        for session in self.sessions.values():
            if session.user != user or session.closing or session is besides \
                    or (session.grant or 0) < MIN_GRANT:
                continue
            if session.worker.tell({"t": "reclaim"}):
                asked.add(session.worker.wid)
        return asked

    def _serve_reclaims(self, answered: str | None = None) -> None:
        """Hellos waiting for memory: tried again once every worker asked has answered
        (*answered*: the one that just did), or their wait is over."""
        for reclaim in self.reclaims.due(answered, self.hosts.workers):
            try:
                reclaim.retry()
            except Exception as exc:  # refused after all: a hello is answered as any is
                if reclaim.ident is None:
                    raise
                self._error(reclaim.ident, exc)

    def _serve_pending(self) -> None:
        now = time.monotonic()
        for hello in list(self.pending):
            ready = [w for w in self.hosts.spares(hello.device) if w.port is not None]
            if ready:
                self.pending.remove(hello)
                self._assign(hello, ready[0])
            elif (rest := self.spares.resting(hello.device)) is not None:
                self.pending.remove(hello)
                self._error(hello.ident, SessionLostError(
                    f"workers for device {hello.device} fail to start (see the pool's log); "
                    f"it is tried again in {rest:.0f} s"))
            elif now - hello.since > HELLO_TIMEOUT:
                self.pending.remove(hello)
                self._error(hello.ident, SessionLostError("no worker became ready in time"))
        self._keep_spares()

    def _assign(self, hello: PendingHello, worker: Worker) -> None:
        session = Session(secrets.token_hex(8), secrets.token_bytes(32), hello.user, worker,
                          hello.memory_limit, client=hello.client, grant=hello.grant,
                          label=hello.label, apart=hello.apart)
        self.sessions[session.sid] = session
        self.usage.open_session(session.sid, session.user, worker.device, session.client)
        self.assign_worker(session, worker, account=hello.account)
        reply = {"ok": True, "session": session.sid, "key": session.key,
                 **self._worker_fields(session),
                 "lease_timeout": self.settings.lease_timeout,
                 "memory_limit": session.memory_limit}
        self._reply(hello.ident, reply)
        log.info("session %s for %s (%s) on %s", session.sid, session.user, session.client,
                 worker.device)

    def status(self) -> dict[str, Any]:
        """Devices, users and shares, sessions, ended sessions (see pool_status)."""
        return build_status(self)

    # ------------------------------------------------------------ loop
    def _reload_users(self) -> None:
        """Every second (and on SIGHUP): pick up edits of the users file. Running sessions go
        on under new weights and quotas; a removed user's sessions end."""
        now = time.monotonic()
        if not self._reload_requested and now < self._reload_at:
            return
        forced, self._reload_requested = self._reload_requested, False
        self._reload_at = now + RELOAD_INTERVAL
        if self.accounts.registry.mode != "file":
            return
        change = self.accounts.registry.reload(force=forced)
        if change is None:
            return
        log.info("users file reloaded: added %s, removed %s, changed %s", sorted(change.added),
                 sorted(change.removed), sorted(change.changed))
        for session in [s for s in self.sessions.values() if s.user in change.removed]:
            self._end_and_stop(session, "user removed from the users file")
        for hello in [p for p in self.pending if p.user in change.removed]:
            self.pending.remove(hello)
            self._error(hello.ident, SessionLostError("this user was removed from the pool"))
        if change.changed or change.added:
            self.hosts.set_weights({name: user.weight
                                    for name, user in self.accounts.registry.users.items()})

    def _expire_leases(self) -> None:
        deadline = time.monotonic() - self.settings.lease_timeout
        for session in list(self.sessions.values()):
            if session.last_seen < deadline:   # (said in the log by _end)
                self._end_and_stop(session, "lease expired")

    def run(self) -> None:
        """Serve until :meth:`stop`; called by ``gpuwb-backend serve`` or a LocalPool thread."""
        self._keep_spares()
        try:
            while not self._stop.is_set():
                for ident, packed in self.held.due():   # (the tarpit keeps replies packed)
                    self.clients.send_multipart([ident, packed])
                wait = min(0.1, self.held.next_in() or 0.1)
                events = dict(self.poller.poll(max(1, int(wait * 1000))))
                own = self.host   # (None across hosts: workers speak through the agents)
                if own is not None:
                    for fd in [fd for fd in events if type(fd) is int]:
                        worker = own.worker_at(fd)
                        if worker is not None:
                            self._on_control(worker)
                if self.cluster is not None:
                    self.cluster.on_events(events)
                if self.clients in events:
                    self._on_client()
                if self.auth.wake_fd in events:
                    self._on_signed_in()
                if self.admin is not None and self.admin.sock in events:
                    self.admin.serve()
                self._reap()
                self.spares.expire()
                self._expire_leases()
                self._reload_users()
                self._serve_pending()
                if self.moves.moving:
                    self.moves.serve()
                if self.settings.park_idle is not None:
                    self.moves.park_idle(self.settings.park_idle)
                if self.rebalancer is not None:
                    self.rebalancer.maybe()
                if self.reclaims:
                    self._serve_reclaims()
                if self.swaps.waiting_rooms:
                    self.swaps.retry_rooms()
                self.auth.log_summary()   # (at most every LOG_EVERY s: auth_gate.py)
                malformed = self.malformed.line()
                if malformed is not None:
                    log.warning("%s", malformed)
                self.usage.maybe_flush()
                self.samples.maybe_sample(self)
                if self.metrics_server is not None:
                    self._publish()
        finally:
            self._shutdown()

    def _publish(self, every: float = 1.0) -> None:
        """The figures the metrics server reads, taken here in the loop's thread."""
        now = time.monotonic()
        if now - self._published_at >= every:
            self._published_at = now
            self.published = {"status": self.status(), "totals": self.usage.totals(),
                              "device_seconds": self.usage.device_seconds(),
                              "samples": self.samples.latest(),
                              "requests": dict(self.request_counts),
                              "errors": dict(self.error_counts),
                              "auth_refusals": dict(self.auth.refusals),
                              "auth_hashes": self.auth.hashed,
                              "starts_given_up": self.spares.given_up,
                              "agent_send_failures": (self.cluster.agents.send_failures
                                                      if self.cluster is not None else 0)}

    def stop(self) -> None:
        self._stop.set()

    def request_reload(self) -> None:
        """Re-read the users file at the next turn of the loop (SIGHUP; any thread)."""
        self._reload_requested = True

    def _shutdown(self) -> None:
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
        if self.park_at_stop and self.sessions and keeps_sessions(self):   # (kept for the next)
            park_all(self)
        self.hosts.stop_workers()
        for session in list(self.sessions.values()):
            self._end(session, "the pool stopped")
        self.usage.close()
        self.samples.close()
        self.auth.close()
        self.hosts.close()   # (the arbiter, the run directory)
        if self.cluster is not None:
            self.cluster.close()
        self.clients.close()
        if self.admin is not None:
            self.admin.close()
        self.ctx.term()
        if self.listener is not None and not self.restart_requested:   # (else cli.py passes it on)
            self.listener.close()
        same_host.remove_dir(self.ipc_dir)
