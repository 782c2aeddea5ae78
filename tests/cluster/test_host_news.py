"""News of hosts (an agent deployed, a host lost) reaches the front door's loop, which alone
keeps the agents' secrets: no thread changes them under a join.

Without Ray: the front door runs with ``cluster="manual"``, real host agents on threads
(tests/cluster/agent_threads.py), real worker processes on NumPy devices, real sockets.
What Ray's watcher thread does (docs/cluster.md) is done here by a thread of the test
through the same calls.
"""

from __future__ import annotations

import threading

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from tests.cluster.agent_threads import AgentThreads
from tests.waiting import until


class WithdrawnAsRead(dict):
    """The agents socket's table of secrets, whose entry for *withdrawn* goes the moment a
    join has read it: what Ray's watcher did when it reported that host lost (its node
    left) while the host's agent was joining, before the watcher handed its news to the
    front door's loop."""

    def __init__(self, secrets: dict[str, str], withdrawn: str) -> None:
        super().__init__(secrets)
        self.withdrawn = withdrawn

    def get(self, name, default=None):
        value = super().get(name, default)
        if name == self.withdrawn:
            super().pop(name, None)   # (the watcher's thread, between the join's read and its use)
        return value


@pytest.fixture
def pool():
    with LocalPool(cluster="manual", lease_timeout=30) as pool:
        agents = AgentThreads(pool)
        try:
            yield pool, agents
        finally:
            agents.stop_all()


def test_a_secret_withdrawn_while_its_join_is_read_refuses_the_join_and_the_door_serves_on(pool):
    """The join of a host whose secret is withdrawn between its read and its use is refused,
    and the front door goes on: it used to delete the secret it had read (KeyError, out of
    the loop: the front door stopped)."""
    pool, agents = pool
    door = pool.door.cluster.agents
    door.secrets = WithdrawnAsRead({"alpha": "secret-of-alpha", "beta": "secret-of-beta"},
                                   withdrawn="alpha")
    alpha = agents.start("alpha", ["cpu:0"], announce=False)
    assert until(lambda: alpha.refused is not None or not pool._thread.is_alive(), 60)
    assert pool._thread.is_alive(), "the front door's loop ended"
    assert "alpha" in alpha.refused and "no longer expected" in alpha.refused, alpha.refused
    assert pool.door.devices == []
    agents.start("beta", ["cpu:0"], announce=False)
    assert agents.joined("beta/cpu:0")
    with kernelproxy.connect(pool.address, pool.token, timeout=60) as s:
        assert float(module_for(s).ones(3).sum()) == 3.0


def test_news_from_another_thread_is_applied_by_the_loop_in_order(pool):
    """A thread that says "deployed host NAME with SECRET" then "host NAME lost" before the
    agent joins leaves no secret to join with; a host lost after it joined leaves the pool,
    its sessions ended saying why; the same name deployed again joins again."""
    pool, agents = pool
    cluster = pool.door.cluster

    def watcher(*news):   # (what Ray's watcher thread does, in order, from a thread of its own)
        def run():
            for kind, name, text in news:
                (cluster.deployed if kind == "deployed" else cluster.gone)(name, text)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()

    watcher(("deployed", "alpha", "secret-of-alpha"), ("gone", "alpha", "its node left"))
    alpha = agents.start("alpha", ["cpu:0"], announce=False)
    assert until(lambda: alpha.refused is not None, 60)
    assert "wrong secret" in alpha.refused, alpha.refused
    agents.stop("alpha")

    watcher(("deployed", "alpha", "secret-of-alpha"))
    agents.start("alpha", ["cpu:0"], announce=False)
    assert agents.joined("alpha/cpu:0")
    session = kernelproxy.connect(pool.address, pool.token, timeout=60)
    try:
        assert float(module_for(session).ones(2).sum()) == 2.0
        watcher(("gone", "alpha", "its node left the Ray cluster"))
        assert until(lambda: pool.door.devices == [], 60)
        # (an op may still be answered by the worker until the lost host's end reaches it)
        def lost() -> bool:
            try:
                float(module_for(session).ones(2).sum())
            except kernelproxy.SessionLostError as exc:
                assert "host alpha was lost: its node left the Ray cluster" in str(exc), exc
                return True
            return False

        assert until(lost, 60)
    finally:
        session.close()
    assert until(lambda: not agents.thread("alpha").is_alive(), 60)   # (told to stop)
    agents.running.pop("alpha")
    agents.start("alpha", ["cpu:0"])          # deployed again under the same name
    assert agents.joined("alpha/cpu:0")
