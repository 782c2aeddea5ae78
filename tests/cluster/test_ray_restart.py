"""A pool across the hosts of a Ray cluster restarted without losing its sessions (issue 52):
``gpuwb-backend serve --cluster`` with a swap directory every host mounts
(``--swap-dir-shared``; the test cluster's nodes are one machine, as hosts share an NFS
mount), stopped with SIGTERM: every session's worker, on its node, parks its arrays there;
the next pool on the same address and directory deploys its agents again and gives each
returning client its session back on any host's device (the next pool's hosts may be
named otherwise). A Ray cluster of its own (tests/cluster/ray_nodes.py): a pool's agents
hold their nodes' GPUs, so two pools never share one."""

from __future__ import annotations

import numpy as np
import pytest

import kernelproxy
from gpu_backend.security import generate_keypair
from gpu_backend.served import ServedPool
from kernelproxy.modules import module_for

from tests.cluster.test_ray_pool import RayNodes
from tests.gpu_backend.test_users_pool import eventually
from tests.ports import port_the_kernel_hands_no_one

pytestmark = pytest.mark.timeout(300)


def test_a_pool_across_hosts_restarted_gives_each_client_its_session_back(tmp_path):
    nodes = RayNodes()
    try:
        nodes.add("two", 1)   # (the head declares one GPU: two hosts)
        key, public, _ = generate_keypair(tmp_path / "pool.key")
        for attempt in range(3):   # (a free port may be taken before the pool binds it)
            port = port_the_kernel_hands_no_one()
            args = ("--cluster", nodes.address, "--cluster-devices", "numpy", "--key-file",
                    str(key), "--lease-timeout", "60", "--listen", f"tcp://127.0.0.1:{port}",
                    "--swap-dir", str(tmp_path / "swap"), "--swap-dir-shared")
            try:
                first = ServedPool("fair", "cpu", *args, token="restart-token")
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        try:
            def connect() -> kernelproxy.Session:
                return kernelproxy.Session(first.address, "restart-token", server_key=str(public))
            probe = eventually(connect, timeout=120, interval=0.5,
                               retry=(kernelproxy.SessionLostError,))
            eventually(lambda: len(probe.status()["devices"]) == 2, timeout=60, interval=0.2)
            probe.close()
            sessions = [connect() for _ in range(2)]
            data, arrays = {}, {}
            for k, s in enumerate(sessions):
                data[s.id] = np.arange(100_000, dtype=np.float64) * (k + 2)
                arrays[s.id] = module_for(s).asarray(data[s.id])
                float(arrays[s.id][0])
            hosts = {r["device"].split("/")[0] for r in sessions[0].status()["sessions"]}
            assert len(hosts) == 2   # (one session on each host)
        finally:
            first.stop()   # SIGTERM: each host's worker parks its session in the shared directory
        assert (tmp_path / "swap" / "restart" / "sessions.msgpack").exists()
        second = ServedPool("fair", "cpu", *args, token="restart-token")
        try:
            for s in sessions:   # (the first op waits for the new pool's hosts to join)
                assert np.array_equal(arrays[s.id].get(), data[s.id])
                assert s.moves == 1
        finally:
            for s in sessions:
                s.close()
            second.stop()
    finally:
        nodes.close()
