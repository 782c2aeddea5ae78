"""Where the pool puts a new session (gpu_backend/door/placement.py), through a real pool: a
full device refuses with a clear error, and a client's second device must be another one."""

from __future__ import annotations

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool

from tests.waiting import until


def test_a_full_pool_says_so_and_frees_the_place_when_a_session_ends():
    with LocalPool(devices="cpu", max_sessions_per_device=1, spare_workers=1) as pool:
        first = kernelproxy.connect(pool.address, pool.token)
        with pytest.raises(kernelproxy.SessionLostError, match="every device of the pool is full"):
            kernelproxy.connect(pool.address, pool.token)
        first.close()   # (the pool ends it when its worker has gone)
        assert until(lambda: not pool.door.sessions, 20)
        with kernelproxy.connect(pool.address, pool.token) as again:
            assert again.device["kind"] == "numpy"


def test_a_second_device_of_a_one_device_pool_is_refused():
    with LocalPool(devices="cpu", spare_workers=1) as pool:
        with pytest.raises(kernelproxy.SessionLostError, match="has 1 device: a session cannot hold 2"):
            kernelproxy.connect(pool.address, pool.token, devices=2)
