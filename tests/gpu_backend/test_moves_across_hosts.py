"""Issue 52: sessions moved between the hosts of one pool (streamed from the old worker to
the new; a swapped one through a swap directory every host mounts, ``--swap-dir`` with
``--swap-dir-shared``), and a host drained by name. Real host
agents on threads with real workers on NumPy devices, as tests/gpu_backend/test_host_agents.py
deploys them (the "hosts" share this machine's filesystem, as hosts share an NFS mount)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelproxy
from gpu_backend.cli_moves import admin_request
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from tests.gpu_backend.test_host_agents import Agents
from tests.gpu_backend.test_moves import _one_lone, _where
from tests.gpu_backend.test_swap import _row
from tests.waiting import until

PATIENCE = 60.0


@pytest.fixture
def two_hosts(tmp_path, request):
    shared = getattr(request, "param", True)
    with LocalPool(cluster="manual", lease_timeout=30, swap_dir=tmp_path / "swap",
                   swap_dir_shared=shared) as pool:
        agents = Agents(pool)
        try:
            agents.start("alpha", ["cpu:0"])
            agents.start("beta", ["cpu:0"])
            assert until(lambda: len(pool.door.devices) == 2, 30), pool.door.devices
            yield pool
        finally:
            agents.stop_all()


def test_draining_a_host_moves_its_sessions_to_another_with_their_arrays(two_hosts):
    pool = two_hosts
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        host = np.arange(50_000, dtype=np.float64) * 1.5
        x = module_for(s).asarray(host)
        view = x[::3]
        start = _where(pool, s)["device"]
        name = start.split("/")[0]
        reply = admin_request(pool.door.admin.address, {"t": "drain", "devices": [name]})
        assert reply["ok"] and reply["draining"] == [start]
        assert until(lambda: (r := _where(pool, s))["device"] != start and not r["moving"],
                     PATIENCE)
        assert np.array_equal(x.get(), host)            # now on the other host
        assert np.array_equal(view.get(), host[::3])
        assert s.moves == 1 and _where(pool, s)["device"].split("/")[0] != name
        assert s.worker_address.startswith("tcp://")
    finally:
        s.close()


@pytest.mark.parametrize("two_hosts", [False], indirect=True)
def test_without_a_shared_swap_directory_the_old_worker_streams_the_arrays(two_hosts):
    """No swap directory every host mounts: the old worker streams its arrays to the new
    one (worker/loan_stream.py), which copies them into its device as they come; nothing
    goes through a disk, and the old worker ends only once the new one has them."""
    pool = two_hosts
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        host = np.random.default_rng(52).standard_normal(3_000_000)   # (24 MB: many pieces)
        x = module_for(s).asarray(host)
        view, ints = x[1::7], module_for(s).arange(1000, dtype="int16")
        float(x[0])
        start = _where(pool, s)["device"]
        other = next(d for d in pool.door.devices if d != start)
        reply = admin_request(pool.door.admin.address,
                              {"t": "move", "session": s.id, "device": other})
        assert reply["ok"], reply
        assert until(lambda: (r := _where(pool, s))["device"] == other and not r["moving"],
                     PATIENCE)
        assert _where(pool, s)["how"] == "lent"
        assert np.array_equal(x.get(), host) and np.array_equal(view.get(), host[1::7])
        assert np.array_equal(ints.get(), np.arange(1000, dtype=np.int16))
        assert s.moves == 1
        swap_dir = pool.door.settings.swap_dir
        assert not [p for p in swap_dir.rglob("*") if p.is_file()] if swap_dir.exists() else True
    finally:
        s.close()


def test_a_swapped_session_is_not_moved_to_a_host_that_cannot_read_its_files(tmp_path):
    """Its arrays are in its host's swap directory, which the other host does not mount:
    the move is refused, saying why (once its next op has brought them back it can move),
    and the session goes on."""
    with LocalPool(cluster="manual", lease_timeout=30, swap_dir=tmp_path / "swap",
                   swap_idle=0.2) as pool:
        agents = Agents(pool)
        try:
            agents.start("alpha", ["cpu:0"])
            agents.start("beta", ["cpu:0"])
            assert until(lambda: len(pool.door.devices) == 2, 30), pool.door.devices
            s = kernelproxy.connect(pool.address, pool.token)
            try:
                x = module_for(s).arange(10_000.0)
                float(x[0])
                assert until(lambda: _row(s).get("swapped"), PATIENCE)
                start = _where(pool, s)["device"]
                other = next(d for d in pool.door.devices if d != start)
                admin = pool.door.admin.address
                assert admin_request(admin, {"t": "move", "session": s.id, "device": other})["ok"]
                assert until(lambda: _where(pool, s)["refused"], PATIENCE)
                assert "swapped out" in _where(pool, s)["refused"]
                assert float(x.sum()) == 49995000.0 and _where(pool, s)["device"] == start
                assert s.moves == 0
            finally:
                s.close()
        finally:
            agents.stop_all()


@pytest.mark.parametrize("two_hosts", [False], indirect=True)
def test_the_pool_evens_out_its_hosts_by_moving_an_idle_session(two_hosts, monkeypatch):
    """Rebalancing across hosts: one host's device serves two sessions and the other's
    none; once idle, one of them is streamed over, its arrays intact."""
    import gpu_backend.door.rebalance as rebalance
    pool = two_hosts
    monkeypatch.setattr(rebalance, "LOOK", 0.05)
    monkeypatch.setattr(pool.door.rebalancer, "idle", 0.3)
    sessions = [kernelproxy.connect(pool.address, pool.token) for _ in range(3)]
    try:
        arrays, lone, pair = _one_lone(pool, sessions, 2000)
        sessions[lone].close()
        assert until(lambda: [i for i in pair if _where(pool, sessions[i])["moves"] == 1
                              and not _where(pool, sessions[i])["moving"]], PATIENCE)
        hosts = {_where(pool, sessions[i])["device"].split("/")[0] for i in pair}
        assert len(hosts) == 2
        for i in pair:
            assert float(arrays[i].sum()) == 2000.0 * (i + 1)
    finally:
        for s in sessions:
            s.close()
