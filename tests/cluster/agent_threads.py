"""Real host agents on threads of the test process, for a front door run without Ray.

The front door runs with ``cluster="manual"``; each agent is a real
:class:`~gpu_backend.multihost.host_agent.HostAgent` (or a test's subclass of it) on a thread, with
real worker processes, over real sockets. A test deploys an agent as Ray's watcher would:
it tells the front door's loop, from its own thread, which secret the agent was given
(``AcrossHosts.deployed``), then starts the agent.
"""

from __future__ import annotations

import threading
from typing import Any

from gpu_backend.config import PoolSettings
from gpu_backend.multihost.host_agent import HostAgent
from gpu_backend.pool import LocalPool

from tests.waiting import until

__all__ = ["AgentThreads"]


class AgentThreads:
    """Host agents on threads, for *pool* (a LocalPool across hosts)."""

    def __init__(self, pool: LocalPool) -> None:
        self.pool = pool
        self.running: dict[str, tuple[HostAgent, threading.Thread]] = {}

    def start(self, name: str, devices: list[str], kind: type[HostAgent] = HostAgent,
              door: str | None = None, announce: bool = True, **kwargs: Any) -> HostAgent:
        """Start the agent of host *name* (a *kind*, with *kwargs*), connecting to *door*
        (default: the front door's agents socket). *announce*: tell the front door its
        secret first, as Ray's watcher does."""
        cluster = self.pool.door.cluster
        secret = f"secret-of-{name}"
        if announce:
            cluster.deployed(name, secret)
        agent = kind(door or cluster.agents.address, name, secret, "127.0.0.1", devices,
                     PoolSettings(), **kwargs)
        thread = threading.Thread(target=agent.run, name=f"agent-{name}", daemon=True)
        thread.start()
        self.running[name] = (agent, thread)
        return agent

    def thread(self, name: str) -> threading.Thread:
        return self.running[name][1]

    def stop(self, name: str) -> None:
        agent, thread = self.running.pop(name)
        agent.stop()
        thread.join(60)
        assert not thread.is_alive(), f"the agent of {name} did not stop"

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)

    def joined(self, *devices: str, seconds: float = 60.0) -> bool:
        """Whether the pool's devices became *devices* within *seconds*."""
        return until(lambda: sorted(self.pool.door.devices) == sorted(devices), seconds, 0.02)
