"""Shared fixtures: a real pool (front door + worker processes) on real sockets.

``GPUWB_TEST_DEVICES`` picks the pool's devices (default ``cpu``: the NumPy
device); ``GPUWB_REFERENCE`` picks what the differential tests compare with
(``numpy`` by default, ``cupy`` on a GPU machine). See tests/differential.py.
"""

from __future__ import annotations

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from .differential import POOL_RUNS_NUMPY, REFERENCE_IS_NUMPY, TEST_DEVICES, Differential, reference_module

DEVICES = TEST_DEVICES


def pytest_report_header(config):
    return (f"gpu-workbench: reference {'numpy' if REFERENCE_IS_NUMPY else 'cupy'}, "
            f"pool devices {DEVICES!r} ({'numpy' if POOL_RUNS_NUMPY else 'cupy'})")


@pytest.fixture(scope="session")
def pool():
    """One pool for the whole run; tests that need their own settings start their own."""
    with LocalPool(devices=DEVICES, lease_timeout=20.0, memory_limit=1 << 30) as p:
        yield p


@pytest.fixture(scope="module")
def session(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    yield s
    s.close()


@pytest.fixture
def cp(session):
    """The proxy ``cupy`` module bound to this module's session (no import hook needed)."""
    return module_for(session)


@pytest.fixture(scope="session")
def ref():
    return reference_module()


@pytest.fixture
def same(cp, ref, session):
    """``same(body)`` runs *body(xp)* with the reference and the remote cupy and compares."""
    return Differential(ref, cp, session)
