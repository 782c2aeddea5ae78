"""Fixtures of the bad-input tests (their rig: bad_input_rig.py)."""

from __future__ import annotations

import pytest
import zmq

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from .bad_input_rig import LEASE, MB, Bystander


@pytest.fixture(scope="module")
def bad_pool():
    with LocalPool(devices="cpu", lease_timeout=LEASE, memory_limit=256 * MB,
                   spare_workers=2) as pool:
        yield pool


@pytest.fixture(scope="module")
def zctx():
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


@pytest.fixture(scope="module")
def bystander(bad_pool):
    b = Bystander(bad_pool)
    yield b
    b.session.close()


@pytest.fixture(params=["unix", "tcp"])
def victim(request, bad_pool, bystander):
    """A session whose worker port and key the test abuses: a client on the pool's host
    (a Unix socket to its worker) or a remote one (ZeroMQ over tcp)."""
    address = bad_pool.address if request.param == "unix" else bad_pool.tcp_address
    s = kernelproxy.connect(address, bad_pool.token)
    assert s.worker_address.startswith(request.param + "://")
    yield s
    s.close()
    module_for(bystander.session)
