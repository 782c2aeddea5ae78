"""What the pool does when a message between the front door and a host's agent, or a worker's
``ready``, is lost: every loss is either impossible or seen, and recovered from
(docs/cluster.md, "Messages lost").

- A spare that has not said ``ready`` within ``ready_timeout`` (its ``spawn`` or its
  ``ready`` was lost, or it is stuck in its device's initialisation) is ended, counted as
  a failed start, and replaced; the hello that waited for it is served by the next one,
  long before ``HELLO_TIMEOUT``. On a single host as across hosts.
- A front door that cannot write to an agent (its connection has gone) drops the host.
- An agent whose connection to the front door breaks, or cannot be secured, ends, with
  its workers.

Real front doors, real host agents on threads (tests/cluster/agent_threads.py), real
workers on NumPy devices, real sockets. A message is lost by a test's subclass of the real
agent or front door (it drops the first message of a kind, as a broken link would), or by
cutting a real TCP connection (tests/cluster/tcp_relay.py). The deadlines are generous
for a loaded 2-core host (a NumPy worker forked from its zygote is ready in tens of
milliseconds), and nothing here asserts a time: each wait polls for its condition.
"""

from __future__ import annotations

import os
import signal

import pytest
import zmq

import kernelproxy
from gpu_backend.multihost import agent_door
from gpu_backend.door.frontdoor import HELLO_TIMEOUT, FrontDoor
from gpu_backend.multihost.host_agent import HostAgent
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.security import generate_keypair
from kernelproxy.modules import module_for

from tests.cluster.agent_threads import AgentThreads
from tests.cluster.tcp_relay import TcpRelay
from tests.waiting import until

#: The tests' ready deadline (seconds): long beside a NumPy worker's start on a loaded host
#: (tens of milliseconds forked from its zygote; the first waits for the zygote's imports).
READY = 15.0
#: How long a client's hello may take here: half the front door's HELLO_TIMEOUT, so that a
#: hello served only by HELLO_TIMEOUT's end (what a lost ready used to cost) fails.
HELLO_WAIT = HELLO_TIMEOUT / 2


class LossyAgent(HostAgent):
    """A real host agent that loses the first message of each kind in *lose*: ``("in",
    "spawn")`` is a spawn from the front door never carried out, ``("out", "ready")`` a
    worker's ready never relayed to it. What it lost is in :attr:`lost`."""

    def __init__(self, *args, lose: set[tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lose = set(lose)
        self.lost: list[dict] = []

    def _lose(self, way: str, kind: str, msg: dict) -> bool:
        if (way, kind) in self.lose:
            self.lose.discard((way, kind))
            self.lost.append(msg)
            return True
        return False

    def _command(self, msg: dict) -> bool:
        if self._lose("in", msg.get("t"), msg):
            return True
        return super()._command(msg)

    def _send(self, msg: dict) -> bool:
        kind = msg["m"].get("t") if msg.get("t") == "worker" else msg.get("t")
        if self._lose("out", kind, msg):
            return True
        return super()._send(msg)


@pytest.fixture
def across():
    with LocalPool(cluster="manual", lease_timeout=60, ready_timeout=READY) as pool:
        agents = AgentThreads(pool)
        try:
            yield pool, agents
        finally:
            agents.stop_all()


def _serves_after_a_loss(pool, agent: LossyAgent) -> str:
    """A hello on the agent's one device is served (by a worker other than the one the
    loss concerned, which was given up on); the worker id the loss concerned."""
    with kernelproxy.connect(pool.address, pool.token, timeout=HELLO_WAIT) as s:
        assert float(module_for(s).arange(5).sum()) == 10.0
        serving = pool.door.sessions[s.id].worker.wid
    (lost,) = agent.lost
    assert serving != lost["w"]
    assert pool.door.spares.given_up >= 1   # (1, unless the host is slower than READY)
    return lost["w"]


def test_a_spare_whose_spawn_is_lost_is_replaced_and_the_hello_served(across):
    pool, agents = across
    agent = agents.start("alpha", ["cpu:0"], kind=LossyAgent, lose={("in", "spawn")})
    assert agents.joined("alpha/cpu:0")
    assert until(lambda: agent.lost, 60)   # (the spare's spawn, sent as the host joined)
    lost = _serves_after_a_loss(pool, agent)
    assert lost not in pool.door.hosts.get("alpha").workers   # (forgotten: the agent never knew it)


def test_a_spare_whose_ready_is_lost_is_ended_replaced_and_the_hello_served(across):
    pool, agents = across
    agent = agents.start("alpha", ["cpu:0"], kind=LossyAgent, lose={("out", "ready")})
    assert agents.joined("alpha/cpu:0")
    assert until(lambda: agent.lost, 60)
    lost = _serves_after_a_loss(pool, agent)
    # the worker whose ready was lost was ended on its host, not left to run unused
    assert until(lambda: lost not in agent.host.workers, 60)


class StuckFirstWorker(FrontDoor):
    """A real front door whose first worker hangs before its ready reaches the loop: the
    worker is stopped (SIGSTOP) and its ready unread, as a worker stuck in CUDA's
    initialisation would be. The worker is :attr:`stuck`."""

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.stuck = None

    def _control_message(self, worker, msg: dict) -> None:
        if msg.get("t") == "ready" and self.stuck is None and not worker.given_up:
            self.stuck = worker
            os.kill(worker.process.pid, signal.SIGSTOP)
            return
        super()._control_message(worker, msg)


class StuckFirstWorkerPool(LocalPool):
    door_class = StuckFirstWorker


def test_a_local_worker_stuck_before_ready_is_killed_replaced_and_the_hello_served():
    with StuckFirstWorkerPool(devices="cpu", ready_timeout=READY, lease_timeout=60) as pool:
        assert until(lambda: pool.door.stuck is not None, 60)
        stuck = pool.door.stuck
        with kernelproxy.connect(pool.address, pool.token, timeout=HELLO_WAIT) as s:
            assert float(module_for(s).arange(4).sum()) == 6.0
            assert pool.door.sessions[s.id].worker is not stuck
        assert pool.door.spares.given_up >= 1
        assert until(lambda: stuck.process.poll() is not None, 60)   # killed, though stopped
        assert stuck.process.poll() == -signal.SIGKILL


def test_an_agent_the_front_door_cannot_write_to_is_lost_and_its_hellos_refused(monkeypatch):
    """A peer that joined and went away: the front door's next message to it fails (its
    connection has gone), and the host is dropped saying so; before, that message was
    dropped without a word, and the hello waited for a worker nobody would start."""
    monkeypatch.setattr(agent_door, "AGENT_SILENCE", 3600.0)   # (only the failed send tells)
    with LocalPool(cluster="manual", spare_workers=0, ready_timeout=READY,
                   lease_timeout=60) as pool:
        cluster = pool.door.cluster
        cluster.deployed("ghost", "secret-of-ghost")
        peer = zmq.Context.instance().socket(zmq.DEALER)
        peer.setsockopt(zmq.LINGER, 0)
        peer.connect(cluster.agents.address)
        try:
            peer.send(packb({"t": "join", "host": "ghost", "secret": "secret-of-ghost",
                             "address": "127.0.0.1", "devices": ["cpu:0"], "pid": 1}))
            assert peer.poll(60_000)
            assert unpackb(peer.recv()) == {"t": "welcome"}
            assert until(lambda: pool.door.devices == ["ghost/cpu:0"], 60)
        finally:
            peer.close()   # (gone: no leave, no more loads)
        with pytest.raises(kernelproxy.SessionLostError,
                           match="host ghost was lost: its agent cannot be written to"):
            kernelproxy.connect(pool.address, pool.token, timeout=HELLO_WAIT)
        assert pool.door.devices == []
        assert cluster.agents.send_failures >= 1


def test_an_agent_whose_connection_breaks_ends_and_its_host_is_lost(across):
    """The TCP connection between an agent and the front door is cut: what was on its way
    either way may be lost, so neither side goes on with it. The agent ends, and its
    workers with it; the front door drops the host and ends its sessions; a new agent of
    the host, deployed again, serves."""
    pool, agents = across
    relay = TcpRelay(pool.door.cluster.agents.port)
    try:
        agent = agents.start("alpha", ["cpu:0"], door=relay.address)
        assert agents.joined("alpha/cpu:0")
        session = kernelproxy.connect(pool.address, pool.token, timeout=HELLO_WAIT)
        try:
            assert float(module_for(session).ones(2).sum()) == 2.0
            relay.cut()
            assert until(lambda: not agents.thread("alpha").is_alive(), 60)
            assert "connection to the front door broke" in agent.lost_door, agent.lost_door
            assert agent.host.workers == {}   # (its workers ended with it)
            assert until(lambda: pool.door.devices == [], 60)
            with pytest.raises(kernelproxy.SessionLostError):
                float(module_for(session).ones(2).sum())
        finally:
            session.close()
        agents.running.pop("alpha")
        agents.start("alpha", ["cpu:0"])   # (deployed again: a new secret, a new connection)
        assert agents.joined("alpha/cpu:0")
        with kernelproxy.connect(pool.address, pool.token, timeout=HELLO_WAIT) as s:
            assert float(module_for(s).ones(3).sum()) == 3.0
    finally:
        relay.close()


def test_an_agent_that_cannot_secure_its_connection_ends_at_once_saying_why(tmp_path):
    """An agent given another public key than the pool's fails CurveZMQ's handshake: it
    ends saying so, where it used to wait for a welcome until its JOIN_TIMEOUT."""
    key_file, _public_file, _public = generate_keypair(tmp_path / "pool.key")
    wrong, _ = zmq.curve_keypair()
    with LocalPool(cluster="manual", key_file=key_file, lease_timeout=60) as pool:
        agents = AgentThreads(pool)
        try:
            agent = agents.start("alpha", ["cpu:0"], server_key=wrong,
                                 key_text=key_file.read_text())
            assert until(lambda: not agents.thread("alpha").is_alive(), 60)
            assert "failed its handshake" in agent.lost_door, agent.lost_door
            assert pool.door.devices == []
        finally:
            agents.running.pop("alpha", None)
