"""The front door's socket for host agents, in a pool across hosts (docs/cluster.md).

One ROUTER, beside the clients' socket, that every host's agent connects its DEALER to
(CurveZMQ with the pool's key pair where the pool has one, as for clients). An agent's
first message is a ``join`` that names its host and proves, with a secret the pool gave
that agent when it deployed it (:attr:`AgentDoor.secrets`, which the front door's loop
fills with what Ray's watcher reports: :mod:`gpu_backend.multihost.across_hosts`), that the pool put
it there; a secret serves once. Anything else from a peer that has not joined is dropped
and counted: the socket's port is open to the network the hosts share, and a peer that
reaches it is not trusted with anything until it has joined. After the join, the agent's messages go to its
:class:`~gpu_backend.multihost.remote_host.RemoteHost`.

No message to an agent is dropped without a word (docs/cluster.md, "Messages lost"): the
socket is ``ROUTER_MANDATORY``, so a send to an agent whose connection has gone raises
(EHOSTUNREACH), as one does to an agent that has read none of :data:`QUEUE` messages
(EAGAIN); either is counted (:attr:`AgentDoor.send_failures`), logged, and its host is
reported (:meth:`AgentDoor.unwritable`) for the front door to drop. An agent that
reconnects is a new peer, never the joined one: what the old connection carried may be
lost, so its host is lost too (the agent ends as well: :mod:`gpu_backend.multihost.host_agent`).
"""

from __future__ import annotations

import hmac
import logging
import re
import time
from typing import Any, Iterator

import zmq

from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.curve import ServerKeys, secure_server
from gpu_backend.multihost.remote_host import HostLeft, RemoteHost

__all__ = ["AgentDoor", "AGENT_SILENCE"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: An agent that has said nothing for this long (it reports every half second) is taken
#: for lost, whatever Ray says (a host cut off from the front door's network).
AGENT_SILENCE = 10.0
#: A host's device as its agent may name it.
_DEVICE = re.compile(r"(cuda|cpu):[0-9]{1,4}")
#: A host's name and address: printable, no separator of the pool's device names.
_NAME = re.compile(r"[A-Za-z0-9_.:\[\]-]{1,100}")
#: Messages read per wake-up at most (the loop then serves its clients too).
READ_BATCH = 1000
#: Messages queued for one agent at most, beyond what its connection holds: an agent that
#: has read none of them is not reading, and its host is dropped rather than a message.
QUEUE = 10_000


class AgentDoor:
    """The agents' ROUTER on *bind_host* (any free port), reached by agents at
    :attr:`address` (*advertise*: the host name agents use; None: set :attr:`address`
    before deploying any)."""

    def __init__(self, ctx: zmq.Context, bind_host: str, advertise: str | None,
                 keys: ServerKeys | None, policy: str) -> None:
        self.policy = policy
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)   # (to a gone agent: raises)
        self.sock.setsockopt(zmq.SNDHWM, QUEUE)
        if keys is not None:
            secure_server(self.sock, keys)
        allow_ipv6(self.sock, f"tcp://{bind_host}:0")
        self.port = self.sock.bind_to_random_port(f"tcp://{bind_host}")
        self.address = f"tcp://{advertise}:{self.port}" if advertise is not None else None
        #: host name -> the secret its agent was deployed with (taken at its join). The
        #: front door's loop alone changes it (:meth:`expect`, :meth:`withdraw`): Ray's
        #: watcher hands its news to the loop (across_hosts.AcrossHosts.deployed, .gone)
        self.secrets: dict[str, str] = {}
        self._hosts: dict[bytes, RemoteHost] = {}
        #: messages dropped: from peers that have not joined, or malformed
        self.dropped = 0
        #: messages that could not be sent (to a joined agent: its host is then lost)
        self.send_failures = 0
        #: joined agents a send failed to, and why, for :meth:`unwritable`
        self._unwritable: dict[bytes, str] = {}

    def send(self, ident: bytes, msg: dict) -> bool:
        """Send *msg* to the agent *ident*; False if it cannot be, which is counted, and
        for a joined agent reported by :meth:`unwritable` (its host is to be dropped)."""
        try:
            self.sock.send_multipart([ident, packb(msg)], zmq.NOBLOCK)
            return True
        except zmq.ZMQError as exc:
            self.send_failures += 1
            why = ("its connection has gone" if exc.errno == zmq.EHOSTUNREACH
                   else f"it has read none of {QUEUE} messages" if exc.errno == zmq.EAGAIN
                   else f"{exc}")
            host = self._hosts.get(ident)
            if host is None:   # (a refusal to a peer that has gone meanwhile)
                log.info("could not answer a peer of the agents socket: %s", why)
            elif ident not in self._unwritable:
                self._unwritable[ident] = why
                log.error("the front door cannot write to the agent of %s (%s; a %s was not "
                          "sent): the host is lost", host.name, why, msg.get("t"))
            return False

    def unwritable(self) -> list[tuple[RemoteHost, str]]:
        """Joined hosts whose agent a send has failed to since the last call, and why."""
        if not self._unwritable:
            return []
        failed, self._unwritable = self._unwritable, {}
        return [(self._hosts[ident], why) for ident, why in failed.items() if ident in self._hosts]

    def receive(self) -> Iterator[tuple[str, Any]]:
        """What the agents have sent: ``("joined", RemoteHost)`` for a host that joined,
        ``("worker", RemoteWorker)`` for a worker with news (its host's ``messages``),
        ``("left", (RemoteHost, why))`` for a host whose agent is ending."""
        for _ in range(READ_BATCH):
            try:
                frames = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 2:
                self.dropped += 1
                continue
            ident, payload = frames
            try:
                msg = unpackb(payload)
            except ValueError:
                self.dropped += 1
                continue
            if not isinstance(msg, dict):
                self.dropped += 1
                continue
            host = self._hosts.get(ident)
            if host is None:
                joined = self._join(ident, msg)
                if joined is not None:
                    yield "joined", joined
                continue
            try:
                worker = host.received(msg)
            except HostLeft as left:
                yield "left", (host, str(left))
                continue
            except (KeyError, TypeError, ValueError) as exc:
                self.dropped += 1
                log.warning("bad message from the agent of %s: %s", host.name, exc)
                continue
            if worker is not None:
                yield "worker", worker

    def _join(self, ident: bytes, msg: dict) -> RemoteHost | None:
        name = msg.get("host")
        secret = msg.get("secret")
        expected = self.secrets.get(name) if isinstance(name, str) else None
        if msg.get("t") != "join" or expected is None or not isinstance(secret, str) \
                or not hmac.compare_digest(secret.encode(), expected.encode()):
            self.dropped += 1
            if msg.get("t") == "join":
                log.warning("refused a join as host %r: not a secret the pool gave", name)
                self.send(ident, {"t": "refused", "why": "unknown host or wrong secret"})
            return None
        devices, address = msg.get("devices"), msg.get("address")
        if type(devices) is not list or not devices or len(devices) > 64 \
                or not all(isinstance(d, str) and _DEVICE.fullmatch(d) for d in devices) \
                or len(set(devices)) != len(devices) \
                or not isinstance(address, str) or not _NAME.fullmatch(address):
            self.dropped += 1
            self.send(ident, {"t": "refused", "why": "a join names an address and its devices "
                                                    "(cuda:K or cpu:K)"})
            return None
        if any(h.name == name for h in self._hosts.values()):   # (its secret served once)
            self.dropped += 1
            self.send(ident, {"t": "refused", "why": f"host {name} has joined already"})
            return None
        taken = self.secrets.pop(name, None)   # (what was read above, if it still stands)
        if taken != expected:   # withdrawn or replaced since: its host was reported lost
            if taken is not None:
                self.secrets[name] = taken
            self.dropped += 1
            self.send(ident, {"t": "refused", "why": f"host {name} is no longer expected"})
            return None
        host = RemoteHost(name, ident, address, devices, self.send, self.policy)
        self._hosts[ident] = host
        self.send(ident, {"t": "welcome"})
        log.info("host %s joined from %s with %s", name, address, ", ".join(devices))
        return host

    def expect(self, name: str, secret: str) -> None:
        """An agent was deployed for host *name* with *secret*: its join may come."""
        self.secrets[name] = secret

    def withdraw(self, name: str) -> None:
        """Host *name* was lost before its agent joined, or since: no join for it now."""
        self.secrets.pop(name, None)

    def silent(self, now: float | None = None) -> list[RemoteHost]:
        """Joined hosts whose agent has said nothing for :data:`AGENT_SILENCE` seconds."""
        now = time.monotonic() if now is None else now
        return [h for h in self._hosts.values() if now - h.heard > AGENT_SILENCE]

    def forget(self, host: RemoteHost) -> None:
        """*host* has left the pool: its agent is told to stop (if it hears), and nothing
        it sends is taken any more."""
        if self._hosts.pop(host.ident, None) is not None:
            self._unwritable.pop(host.ident, None)
            self.send(host.ident, {"t": "stop"})

    def close(self) -> None:
        for host in list(self._hosts.values()):
            self.forget(host)
        self.sock.close()
