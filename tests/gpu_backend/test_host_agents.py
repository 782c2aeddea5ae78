"""A pool across hosts without Ray: the front door's agents socket and real host agents.

The front door runs with ``cluster="manual"`` (no Ray: the test deploys the agents, as Ray
would, by giving each a secret the front door expects). Each agent is a real
:class:`~gpu_backend.multihost.host_agent.HostAgent` on a thread, with real worker processes on
NumPy devices, over real sockets. What is tested here is what does not need Ray: the
relay of every worker control message, placement across hosts, quotas spanning hosts,
an agent leaving, and what the agents socket does with peers that are not agents.
tests/cluster/test_ray_pool.py does the same through Ray.
"""

from __future__ import annotations

import threading

import pytest
import zmq

import kernelproxy
from gpu_backend.config import PoolSettings
from gpu_backend.multihost.host_agent import HostAgent
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.codec import packb, unpackb
from kernelproxy.modules import module_for

from tests.gpu_backend.test_users_pool import MiB, eventually, write_users
from tests.waiting import until


class Agents:
    """Host agents on threads, deployed for *pool* as Ray would deploy them."""

    def __init__(self, pool: LocalPool) -> None:
        self.pool = pool
        self.running: dict[str, tuple[HostAgent, threading.Thread]] = {}

    def start(self, name: str, devices: list[str]) -> HostAgent:
        door = self.pool.door.cluster.agents
        door.secrets[name] = secret = f"secret-of-{name}"
        agent = HostAgent(door.address, name, secret, "127.0.0.1", devices, PoolSettings())
        thread = threading.Thread(target=agent.run, name=f"agent-{name}", daemon=True)
        thread.start()
        self.running[name] = (agent, thread)
        return agent

    def stop(self, name: str) -> None:
        agent, thread = self.running.pop(name)
        agent.stop()
        thread.join(30)
        assert not thread.is_alive()

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


@pytest.fixture
def across(tmp_path):
    path = tmp_path / "users.toml"
    tokens = write_users(path, {"ana": {"sessions": 3}, "carol": {"memory": 16 * MiB},
                                "dev": {}})
    with LocalPool(cluster="manual", users_file=path, lease_timeout=20) as pool:
        agents = Agents(pool)
        try:
            agents.start("alpha", ["cpu:0"])
            agents.start("beta", ["cpu:0", "cpu:1"])
            assert until(lambda: len(pool.door.devices) == 3, 30), pool.door.devices
            yield pool, agents, tokens
        finally:
            agents.stop_all()


def _host_of(session) -> str:
    row = next(r for r in session.status()["sessions"] if r["session"] == session.id)
    return row["device"].split("/")[0]


def test_sessions_spread_over_the_hosts_and_run_there(across):
    pool, _agents, tokens = across
    sessions = [kernelproxy.connect(pool.address, tokens["dev"]) for _ in range(3)]
    try:
        status = sessions[0].status()
        assert sorted(d["device"] for d in status["devices"]) == [
            "alpha/cpu:0", "beta/cpu:0", "beta/cpu:1"]
        assert [d["sessions"] for d in status["devices"]] == [1, 1, 1]   # least loaded
        assert {d["host"] for d in status["devices"]} == {"alpha", "beta"}
        hosts = {h["host"]: h for h in status["hosts"]}
        assert hosts["beta"]["devices"] == ["beta/cpu:0", "beta/cpu:1"]
        assert hosts["alpha"]["sessions"] == 1 and hosts["beta"]["sessions"] == 2
        for k, s in enumerate(sessions):   # ops go straight to the worker on its host
            assert s.worker_address.startswith("tcp://127.0.0.1:")
            assert float(module_for(s).arange(k + 3).sum()) == sum(range(k + 3))
    finally:
        for s in sessions:
            s.close()
    # each worker's last usage report came through its agent: the sessions' ops are logged
    ended = eventually(lambda: len(pool.door.ended) == 3 and pool.door.ended, timeout=20)
    assert all(e["ops"] > 0 and e["reason"] == "closed by the client" for e in ended), ended


def test_the_sessions_quota_counts_every_host(across):
    pool, _agents, tokens = across
    sessions = [kernelproxy.connect(pool.address, tokens["ana"]) for _ in range(3)]
    try:
        assert len({_host_of(s) for s in sessions}) == 2
        with pytest.raises(kernelproxy.QuotaExceededError, match="ana may have 3 sessions"):
            kernelproxy.connect(pool.address, tokens["ana"])
    finally:
        for s in sessions:
            s.close()


def _no_session_open(pool) -> bool:
    """Whether the door has ended every session the tests before closed (a close is
    answered before the door has counted it: placement would count it as load)."""
    try:
        return not [s for s in list(pool.door.sessions.values()) if not s.closing]
    except RuntimeError:   # (the door's thread changed the dict meanwhile)
        return False


def test_the_memory_quota_spans_sessions_on_two_hosts(across):
    pool, _agents, tokens = across
    eventually(lambda: _no_session_open(pool), timeout=20)   # (else both may land on one host)
    a = kernelproxy.connect(pool.address, tokens["carol"])
    b = kernelproxy.connect(pool.address, tokens["carol"])
    try:
        assert _host_of(a) != _host_of(b)
        big = module_for(a).zeros(10 * MiB // 8)             # 10 MiB of carol's 16, on one host
        a.sync()
        with pytest.raises(kernelproxy.OutOfMemoryError, match="memory quota is 16 MiB over all"):
            module_for(b).zeros(8 * MiB // 8).sum().item()   # 8 more on the other: refused
        assert float(module_for(b).zeros(1024).sum()) == 0.0  # b goes on within what is free
        del big
    finally:
        a.close()
        b.close()


def test_sessions_go_to_the_emptier_host_whichever_host_joined_first(tmp_path):
    """Devices equally loaded: the new session goes to the host with fewer sessions, not to
    the device first in the pool's list (the order its hosts joined): beta, two devices,
    joins before alpha, one device; two sessions go one to each host (before, both went to
    beta, as test_the_memory_quota_spans_sessions_on_two_hosts once found on a loaded
    machine where beta's agent joined first)."""
    with LocalPool(cluster="manual", lease_timeout=20) as pool:
        agents = Agents(pool)
        try:
            agents.start("beta", ["cpu:0", "cpu:1"])
            assert until(lambda: len(pool.door.devices) == 2, 30), pool.door.devices
            agents.start("alpha", ["cpu:0"])
            assert until(lambda: len(pool.door.devices) == 3, 30), pool.door.devices
            assert pool.door.devices[-1] == "alpha/cpu:0"
            with kernelproxy.connect(pool.address, pool.token) as a, \
                    kernelproxy.connect(pool.address, pool.token) as b:
                assert {_host_of(a), _host_of(b)} == {"alpha", "beta"}
        finally:
            agents.stop_all()


def test_a_host_whose_agent_ends_loses_its_sessions_and_others_go_on(across):
    pool, agents, tokens = across
    sessions = [kernelproxy.connect(pool.address, tokens["dev"]) for _ in range(3)]
    try:
        on_alpha = [s for s in sessions if _host_of(s) == "alpha"]
        others = [s for s in sessions if s not in on_alpha]
        assert len(on_alpha) == 1
        agents.stop("alpha")
        assert pool.door.devices == ["beta/cpu:0", "beta/cpu:1"]
        with pytest.raises(kernelproxy.SessionLostError,
                           match="host alpha was lost: its agent ended"):
            float(module_for(on_alpha[0]).ones(2).sum())
        for s in others:
            assert float(module_for(s).ones(2).sum()) == 2.0
        ended = [e for e in pool.door.ended if e["device"] == "alpha/cpu:0"]
        assert ended and ended[0]["user"] == "dev"
        with kernelproxy.connect(pool.address, tokens["dev"]) as again:   # opens elsewhere
            assert _host_of(again) == "beta"
        agents.start("alpha", ["cpu:0"])                      # back: takes sessions at once
        assert until(lambda: "alpha/cpu:0" in pool.door.devices, 30)
        with kernelproxy.connect(pool.address, tokens["dev"]) as fresh:
            assert _host_of(fresh) == "alpha"                 # the least loaded device
            assert float(module_for(fresh).ones(4).sum()) == 4.0
    finally:
        for s in sessions:
            s.close()


def test_the_agents_socket_takes_nothing_from_a_peer_that_has_not_joined(across):
    """Garbage, a join with a wrong secret, a secret used twice, an agent's message before
    any join: each is dropped (a refusal answered), and the pool serves on."""
    pool, _agents, tokens = across
    door = pool.door.cluster.agents
    ctx = zmq.Context.instance()
    peer = ctx.socket(zmq.DEALER)
    peer.setsockopt(zmq.LINGER, 0)
    peer.connect(door.address)
    try:
        before = door.dropped
        peer.send(b"\xc1 not msgpack")
        peer.send_multipart([b"two", b"frames"])
        peer.send(packb({"t": "worker", "w": "alpha-w1", "m": {"t": "ready", "port": 1}}))
        peer.send(packb({"t": "join", "host": "alpha", "secret": "guess", "address": "127.0.0.1",
                         "devices": ["cpu:0"], "pid": 1}))
        assert peer.poll(10_000)
        assert unpackb(peer.recv()) == {"t": "refused", "why": "unknown host or wrong secret"}
        door.secrets["gamma"] = "right"
        peer.send(packb({"t": "join", "host": "gamma", "secret": "right", "address": "x y",
                         "devices": ["tpu:0"], "pid": 1}))
        assert peer.poll(10_000)
        assert unpackb(peer.recv())["t"] == "refused"         # a malformed join
        peer.send(packb({"t": "join", "host": "alpha", "secret": "secret-of-alpha",
                         "address": "127.0.0.1", "devices": ["cpu:0"], "pid": 1}))
        assert peer.poll(10_000)
        assert unpackb(peer.recv())["t"] == "refused"         # its secret served once
        assert until(lambda: door.dropped - before == 6, 10), door.dropped - before
        assert "gamma/tpu:0" not in pool.door.devices
        with kernelproxy.connect(pool.address, tokens["dev"]) as s:
            assert float(module_for(s).ones(3).sum()) == 3.0
    finally:
        peer.close()


def test_a_host_agent_serves_the_test_device_as_a_single_host_pool_does(tmp_path):
    """The agent's workers on the run's device (the NumPy device in CI; a GPU with
    ``GPUWB_TEST_DEVICES=0`` on the GPU machine): the results are the reference's, and
    the session's device is the agent's (its name in the pool is ``HOST/…``)."""
    import numpy as np

    from gpu_backend.devices import parse_devices
    from tests.differential import TEST_DEVICES, reference_module, to_host

    devices = parse_devices(TEST_DEVICES)[:1]
    with LocalPool(cluster="manual", lease_timeout=30) as pool:
        agents = Agents(pool)
        try:
            agents.start("gpuhost", devices)
            assert until(lambda: pool.door.devices == [f"gpuhost/{devices[0]}"], 60)
            with kernelproxy.connect(pool.address, pool.token) as s:
                cp, ref = module_for(s), reference_module()
                a = np.arange(64, dtype=np.float32).reshape(8, 8) / 7
                got = (cp.asarray(a) @ cp.asarray(a).T + cp.sin(cp.asarray(a))).sum(axis=0)
                want = (ref.asarray(a) @ ref.asarray(a).T + ref.sin(ref.asarray(a))).sum(axis=0)
                np.testing.assert_allclose(to_host(got), to_host(want), rtol=1e-5)
                assert s.device["kind"] == ("numpy" if devices[0].startswith("cpu") else "cupy")
                (row,) = s.status()["sessions"]
                assert row["device"] == f"gpuhost/{devices[0]}"
        finally:
            agents.stop_all()


def test_status_and_metrics_show_every_host():
    """``gpuwb status`` and ``%gpu status`` (status_group) have a Hosts table; the metrics
    count the hosts and each host's sessions."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from workbench.pool_views import status_group
    from workbench.views import to_text

    with LocalPool(cluster="manual", lease_timeout=30, metrics_port=0) as pool:
        agents = Agents(pool)
        try:
            agents.start("alpha", ["cpu:0"])
            agents.start("beta", ["cpu:0", "cpu:1"])
            assert until(lambda: len(pool.door.devices) == 3, 30)
            with kernelproxy.connect(pool.address, pool.token) as s:
                text = to_text(status_group(s.status(), mine=s.id), width=200)
                assert "Hosts" in text and "hosts" in text
                for host, devices in (("alpha", 1), ("beta", 2)):
                    line = next(x for x in text.splitlines() if x.strip(" │|").startswith(host))
                    assert f" {devices} " in line, line
                assert "alpha/cpu:0" in text and "beta/cpu:1" in text

                def scraped() -> dict:
                    port = pool.door.metrics_server.server_port
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                        families = text_string_to_metric_families(r.read().decode())
                    return {(x.name, x.labels.get("host")): x.value
                            for f in families for x in f.samples}

                def counted() -> None:
                    # (the metrics read the snapshot the door's loop publishes: one that has
                    # both hosts may be from before the session opened; wait for its count)
                    values = scraped()
                    assert values.get(("gpuwb_hosts", None)) == 2, values
                    assert sum(values.get(("gpuwb_host_sessions", h), 0)
                               for h in ("alpha", "beta")) == 1, values
                eventually(counted, timeout=30)
        finally:
            agents.stop_all()
