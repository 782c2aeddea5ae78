"""A GPU host's agent in a pool across hosts: the host's workers, kept for the front door.

The agent holds the host's :class:`~gpu_backend.hosts.worker_host.WorkerHost` (its workers and
their zygotes, its per-device arbiter, its run directory) and relays, over one DEALER
connection to the front door's agents socket (:mod:`gpu_backend.multihost.agent_door`), what the
front door and the workers say to each other over the workers' control channels, tagged
by worker id. It also carries out the front door's ``spawn``, ``end``, ``kill`` and the
arbiter's ``attach``, ``detach`` and ``weights``, and reports every half second
(``load``), which tells the front door it is alive. The front door decides everything:
the agent has no notion of users, quotas or placement.

It runs in a thread of whatever process holds it: a Ray actor on its node
(:mod:`gpu_backend.multihost.cluster`), or any process given the front door's agents address and
the secret the front door expects. A worker's ops never pass through it: clients talk to
their worker directly, at the host's :attr:`address`.

Nothing it sends may vanish unnoticed (docs/cluster.md, "Messages lost"). Over one
connection ZeroMQ loses nothing, so the agent ends, with its workers, as soon as either
could have happened: its connection to the front door broke (a reconnection would be a
peer the front door does not know, and what was on its way is gone; ZMTP heartbeats tell
a connection whose far end went silent), or its queue to the front door is full (a front
door that has read none of :data:`QUEUE` messages). The front door, which loses the host
then too, ends the host's sessions saying why.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import zmq
from zmq.utils.monitor import recv_monitor_message

from gpu_backend.config import PoolSettings
from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.curve import secure_client
from gpu_backend.runtime.run_dir import make_run_dir, remove_run_dir
from gpu_backend.security import InsecureListenError, is_loopback
from gpu_backend.hosts.worker_host import CHANNEL_CLOSED, WorkerHost

__all__ = ["HostAgent", "LOAD_EVERY"]

log = logging.getLogger("gpu_backend.agent")

#: Seconds between the agent's ``load`` reports (its sign of life).
LOAD_EVERY = 0.5
#: How long the agent waits for the front door's welcome before it gives up (seconds).
JOIN_TIMEOUT = 60.0
#: Messages queued for the front door at most, beyond what the connection holds; a send
#: that finds them all unread ends the agent rather than drop one.
QUEUE = 10_000
#: ZMTP heartbeats on the connection to the front door (seconds): one is sent every
#: HEARTBEAT_EVERY, and a connection that carries nothing back for HEARTBEAT_TIMEOUT (the
#: front door's AGENT_SILENCE) is dropped, which ends the agent (a host cut off).
HEARTBEAT_EVERY = 1.0
HEARTBEAT_TIMEOUT = 10.0
#: libzmq's events for a connection whose handshake (CurveZMQ's, with a wrong key) failed
_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)


class HostAgent:
    """The agent of host *name*: serves *devices* (as this host names them) for the front
    door at *door* (its agents socket), which expects *secret*. Workers listen on
    *address*. *server_key*: the pool's public key (the agents socket is a CurveZMQ
    server); *key_text*: the pool's key file, which the workers serve with."""

    def __init__(self, door: str, name: str, secret: str, address: str, devices: list[str],
                 settings: PoolSettings, server_key: bytes | None = None,
                 key_text: str | None = None) -> None:
        if key_text is None and not is_loopback(address.strip("[]")):
            raise InsecureListenError(
                f"host {name}: workers would listen on {address} without encryption; start "
                "the pool with --key-file (the agents get its key pair)")
        self.name, self.address, self.devices = name, address, list(devices)
        self._secret = secret
        self._stop = threading.Event()
        self.ctx = zmq.Context()
        self.poller = zmq.Poller()
        #: the pool's key pair, where this host's workers read it (a private directory)
        self._key_dir = make_run_dir() if key_text is not None else None
        key_file = None
        if key_text is not None:
            key_file = Path(self._key_dir) / "pool.key"
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(key_text)
        self.host = WorkerHost(self.ctx, settings, self.devices, None, self.poller,
                               bind_host=address, key_file=key_file)
        self.door = self.ctx.socket(zmq.DEALER)
        self.door.setsockopt(zmq.LINGER, 1000)
        self.door.setsockopt(zmq.SNDHWM, QUEUE)
        self.door.setsockopt(zmq.HEARTBEAT_IVL, int(HEARTBEAT_EVERY * 1000))
        self.door.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(HEARTBEAT_TIMEOUT * 1000))
        if server_key is not None:
            secure_client(self.door, server_key)
        allow_ipv6(self.door, door)
        #: tells when the connection to the front door breaks (libzmq's socket monitor)
        self._link = self.door.get_monitor_socket(zmq.EVENT_DISCONNECTED | _HANDSHAKE_FAILED)
        self._link.setsockopt(zmq.LINGER, 0)
        self.door.connect(door)
        self.poller.register(self.door, zmq.POLLIN)
        self.poller.register(self._link, zmq.POLLIN)
        self.welcomed = threading.Event()
        #: why the front door refused this agent, if it did
        self.refused: str | None = None
        #: why this agent gave its front door up (its connection broke, or it stopped
        #: taking messages), if it did; the agent then ends
        self.lost_door: str | None = None
        #: messages that could not be sent to the front door (at most one: the agent ends)
        self.send_failures = 0

    # ------------------------------------------------------------ the loop
    def run(self) -> None:
        """Serve until the front door says stop, or :meth:`stop`; then end every worker."""
        self._send({"t": "join", "host": self.name, "secret": self._secret,
                    "address": self.address, "devices": self.devices, "pid": os.getpid()})
        started = time.monotonic()
        next_load = 0.0
        told_to_stop = False
        try:
            while not self._stop.is_set() and self.lost_door is None:
                events = dict(self.poller.poll(100))
                if self._link in events and self._link_broke():
                    break
                if self.door in events and not self._from_door():
                    told_to_stop = True
                    return
                for fd in [fd for fd in events if type(fd) is int]:
                    worker = self.host.worker_at(fd)
                    if worker is not None:
                        self._relay(worker)
                for worker, code in self.host.exited():
                    self._relay(worker)
                    self._send({"t": "exited", "w": worker.wid, "code": code})
                now = time.monotonic()
                if not self.welcomed.is_set():
                    if now - started > JOIN_TIMEOUT:
                        self.refused = "the front door did not answer the join"
                        log.error("host %s: %s", self.name, self.refused)
                        return
                elif now >= next_load:
                    next_load = now + LOAD_EVERY
                    snapshot = self.host.arbiter.snapshot if self.host.arbiter is not None else {}
                    self._send({"t": "load", "arbiter": snapshot,
                                "workers": len(self.host.workers)})
        except Exception as exc:   # (a bug of ours: the front door hears why, below)
            log.exception("host %s: the agent's loop failed", self.name)
            self.refused = self.refused or f"the agent's loop failed: {exc!r:.200}"
            raise
        finally:   # (told to stop, or no front door to tell: no leave)
            self._close(None if told_to_stop or self.lost_door is not None
                        else (self.refused or "stopped on its host"))

    def stop(self) -> None:
        """End the loop (from any thread)."""
        self._stop.set()

    # ------------------------------------------------------------ both ways
    def _send(self, msg: dict) -> bool:
        """Queue *msg* for the front door; False if it cannot be: the front door has read
        none of the last :data:`QUEUE`, or was given up already. The agent then ends."""
        if self.lost_door is not None:
            return False
        try:
            self.door.send(packb(msg), zmq.NOBLOCK)
            return True
        except zmq.Again:
            self.send_failures += 1
            self._give_up_door(f"the front door took none of its last {QUEUE} messages "
                               f"(a {msg.get('t')} could not be sent)")
            return False

    def _link_broke(self) -> bool:
        """Whether the socket monitor told of a broken connection to the front door."""
        while True:
            try:
                event = recv_monitor_message(self._link, zmq.NOBLOCK)
            except zmq.Again:
                return self.lost_door is not None
            if event["event"] & _HANDSHAKE_FAILED:   # (then DISCONNECTED: this says why)
                self._give_up_door("its connection to the front door failed its handshake "
                                   "(not the pool's public key?)")
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                self._give_up_door("its connection to the front door broke (what was on "
                                   "its way may be lost)")

    def _give_up_door(self, why: str) -> None:
        if self.lost_door is None:
            self.lost_door = why
            log.error("host %s: %s: the agent ends, and its workers", self.name, why)

    def _relay(self, worker) -> None:
        for msg in self.host.messages(worker):
            if msg is not CHANNEL_CLOSED:   # (its exit is reported once the process is collected)
                self._send({"t": "worker", "w": worker.wid, "m": msg})

    def _from_door(self) -> bool:
        """Carry out what the front door sent; False once it says stop (or refuses us)."""
        while True:
            try:
                payload = self.door.recv(zmq.NOBLOCK)
            except zmq.Again:
                return True
            try:
                msg = unpackb(payload)
                if not isinstance(msg, dict):
                    raise ValueError("not a map")
                if not self._command(msg):
                    return False
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("host %s: bad message from the front door: %s", self.name, exc)

    def _command(self, msg: dict) -> bool:
        kind = msg["t"]
        workers = self.host.workers
        if kind == "tell":
            worker = workers.get(msg["w"])
            if worker is not None and isinstance(msg["m"], dict):
                worker.tell(msg["m"])
        elif kind == "spawn":
            self._spawn(str(msg["w"]), msg["device"])
        elif kind in ("end", "kill"):
            worker = workers.get(msg["w"])
            if worker is not None:
                worker.end() if kind == "end" else worker.process.kill()
        elif kind in ("attach", "detach", "weights"):
            if self.host.arbiter is not None:
                if kind == "attach":
                    self.host.arbiter.attach(msg["lease"], msg["device"], msg["session"],
                                             msg["user"], float(msg["weight"]))
                elif kind == "detach":
                    self.host.arbiter.detach(msg["lease"])
                else:
                    self.host.arbiter.set_weights(dict(msg["weights"]))
        elif kind == "welcome":
            self.welcomed.set()
        elif kind == "refused":
            self.refused = str(msg.get("why"))
            log.error("host %s: the front door refused this agent: %s", self.name, self.refused)
            return False
        elif kind == "stop":
            return False
        else:
            raise ValueError(f"unknown message type {kind!r:.40}")
        return True

    def _spawn(self, wid: str, device: str) -> None:
        if device not in self.devices or wid in self.host.workers:
            self._send({"t": "exited", "w": wid, "code": -1})
            return
        try:
            self.host.spawn(device, wid)
        except OSError as exc:   # (no more processes, descriptors): the front door counts it
            log.error("host %s: cannot start a worker for %s: %s", self.name, device, exc)
            self._send({"t": "exited", "w": wid, "code": -1})

    def _close(self, leaving: str | None) -> None:
        """Say *leaving* (why this agent ends of its own accord; None: the front door said
        stop), so that the front door ends this host's sessions saying so; then end every
        worker, telling the front door how each ended."""
        try:
            if leaving is not None and self.welcomed.is_set():
                self._send({"t": "leave", "why": leaving})
            self.host.stop_workers()
            for worker, code in self.host.exited():
                self._relay(worker)
                self._send({"t": "exited", "w": worker.wid, "code": code})
        finally:
            self.host.close()
            self.door.disable_monitor()
            self._link.close()
            self.door.close(0 if self.lost_door is not None else None)
            self.ctx.term()
            remove_run_dir(self._key_dir)
