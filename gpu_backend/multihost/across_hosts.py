"""A front door's side of a pool across hosts: hosts joining, hosts lost.

With ``--cluster`` the front door runs no worker itself. It opens the agents socket
(:mod:`gpu_backend.multihost.agent_door`), has Ray deploy an agent on every GPU node
(:mod:`gpu_backend.multihost.cluster`), and from then on each host that joins is one more
:class:`~gpu_backend.multihost.remote_host.RemoteHost` in ``door.hosts``: its devices take new
sessions at once. A host lost (its node left Ray, its agent died, or its agent fell
silent) leaves ``door.hosts``; its sessions end (their clients' next heartbeat or op
says ``SessionLostError``, and they may open a new session, which goes to another
host), and hellos waiting for its workers are refused. Accounts, quotas and the usage
log stay with the front door, so they span the hosts and outlive any of them.

News of hosts comes from other threads (Ray's watcher: an agent deployed with a secret,
a host lost) through one :class:`~gpu_backend.runtime.wake_queue.WakeQueue`, :attr:`AcrossHosts.news`,
in the order it was put; the loop applies it (:meth:`AcrossHosts.deployed`,
:meth:`AcrossHosts.gone` put it), so that the loop alone changes the front door's tables,
the agents' secrets among them.

``cluster = "manual"`` opens the agents socket without Ray: agents are then started by
whoever calls :meth:`AcrossHosts.deployed` (or fills ``agents.secrets`` before the loop
runs: benchmarks/cluster_scale.py drives the front door so).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import zmq

from gpu_backend.multihost.agent_door import AGENT_SILENCE, AgentDoor
from gpu_backend.protocol.curve import ServerKeys
from gpu_backend.multihost.remote_host import RemoteHost
from gpu_backend.security import is_loopback
from gpu_backend.multihost.host_news import HostDeployed, HostGone
from gpu_backend.runtime.wake_queue import WakeQueue

__all__ = ["AcrossHosts", "WILDCARDS"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: Listen hosts that are no address an agent could connect to.
WILDCARDS = ("0.0.0.0", "*", "[::]", "::", "")


class AcrossHosts:
    """The hosts of *door* (a FrontDoor whose settings name a cluster)."""

    def __init__(self, door: Any, keys: ServerKeys | None) -> None:
        self.door = door
        settings = door.settings
        host = settings.host
        self.agents = AgentDoor(door.ctx, host if host not in ("", "*") else "0.0.0.0",
                                None if host in WILDCARDS else host, keys, settings.policy)
        door.poller.register(self.agents.sock, zmq.POLLIN)
        #: news of hosts from other threads, for the loop (HostDeployed, HostGone)
        self.news: WakeQueue[HostDeployed | HostGone] = WakeQueue()
        door.poller.register(self.news.fd, zmq.POLLIN)
        self.ray = None
        if settings.cluster != "manual":
            from gpu_backend.multihost.cluster import RayHosts   # (Ray: the cluster extra, only here)
            key_text = settings.key_file.expanduser().read_text() if settings.key_file else None
            if self.agents.address is None:   # a wildcard listen host: this node's address
                self.agents.address = f"tcp://{RayHosts.node_address()}:{self.agents.port}"
            self.ray = RayHosts(settings.cluster, self.agents.address, self.news, settings,
                                keys.public if keys is not None else None, key_text)
        elif self.agents.address is None:
            self.agents.address = f"tcp://127.0.0.1:{self.agents.port}"
        if keys is None and not is_loopback(self.agents.address.split("//")[1].rsplit(":", 1)[0]):
            raise ValueError("a pool across hosts off loopback needs --key-file")

    # ------------------------------------------------------------ any thread's calls
    def deployed(self, name: str, secret: str) -> None:
        """An agent was deployed for host *name* with *secret* (from any thread)."""
        self.news.put(HostDeployed(name, secret))

    def gone(self, name: str, why: str) -> None:
        """Host *name* is lost, *why* (from any thread)."""
        self.news.put(HostGone(name, why))

    # ------------------------------------------------------------ the loop's calls
    def on_events(self, events: dict) -> None:
        """Whatever the agents and Ray said since the last turn of the loop."""
        if self.news.fd in events or self.agents.sock in events:
            # the news first: a join is read only after its agent's deployment was put
            for news in self.news.take():
                self._apply(news)
        if self.agents.sock in events:
            for kind, item in self.agents.receive():
                if kind == "joined":
                    self.joined(item)
                elif kind == "left":
                    host, why = item
                    self.lost(host.name, f"its agent ended ({why})")
                else:
                    self.door.worker_spoke(item)
        for host in self.agents.silent():
            self.lost(host.name, f"its agent has said nothing for {AGENT_SILENCE:g} s")
        for host, why in self.agents.unwritable():
            self.lost(host.name, f"its agent cannot be written to ({why})")

    def _apply(self, news: HostDeployed | HostGone) -> None:
        if isinstance(news, HostDeployed):
            self.agents.expect(news.name, news.secret)
        else:
            self.agents.withdraw(news.name)   # (not joined yet: it will not now)
            self.lost(news.name, news.why)

    def joined(self, host: RemoteHost) -> None:
        self.door.host_joined(host)

    def lost(self, name: str, why: str) -> None:
        host = self.door.host_lost(name, why)
        if host is not None:
            self.agents.forget(host)   # (told to stop, if it still hears)

    def status(self) -> list[dict]:
        """One row per host (``StatusHost``)."""
        now = time.monotonic()
        sessions = list(self.door.sessions.values())
        return [{"host": h.name, "address": h.address, "devices": list(h.devices),
                 "workers": h.worker_processes,
                 "sessions": sum(s.worker.device in h.devices and not s.closing for s in sessions),
                 "joined": round(now - h.joined, 3), "heard": round(now - h.heard, 3)}
                for h in self.door.hosts]

    def close(self) -> None:
        self.agents.close()
        if self.ray is not None:
            self.ray.close()
        self.news.close()
