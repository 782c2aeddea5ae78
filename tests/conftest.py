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


#: Seconds each of the slowest files took on a 2-core machine (2026-11-25, four processes,
#: the machine shared). The suite hands whole files to its processes (--dist loadfile) in
#: the order of collection (--no-loadscope-reorder); these go first, longest first, so that
#: no process starts a long file when the others are nearly done (longest-first keeps the
#: processes' ends close). Files not named here follow in their usual order. A figure only
#: orders: update it when a file becomes one of the slowest.
SLOW_FILES = {
    "tests/cluster/test_lost_messages.py": 59,
    "tests/kernelproxy/test_stretch_fast_path.py": 49,
    "tests/workbench/test_lab_browser_shared_pool.py": 38,
    "tests/workbench/test_lab_browser.py": 35,
    "tests/project/test_programs_benchmark.py": 34,
    "tests/gpu_backend/test_users_pool.py": 33,
    "tests/gpu_backend/test_bad_input.py": 30,
    "tests/gpu_backend/test_swap.py": 25,
    "tests/workbench/test_kernel.py": 24,
    "tests/project/test_fairness_benchmark.py": 24,
    "tests/project/test_fresh_install.py": 21,
    "tests/gpu_backend/test_spares.py": 21,
    "tests/gpu_backend/test_faults_lifecycle.py": 21,
    "tests/workbench/test_gpuwb_lab.py": 18,
    "tests/project/test_cupy_suite.py": 16,
    "tests/project/test_import_structure.py": 13,
    "tests/gpu_backend/test_stretch_replay.py": 13,
    "tests/gpu_backend/test_release_at_read.py": 13,
    "tests/gpu_backend/test_users.py": 12,
    "tests/gpu_backend/test_status_for_the_panel.py": 12,
    "tests/gpu_backend/test_bad_graph_input.py": 12,
    "tests/gpu_backend/test_client_exit.py": 11,
    "tests/project/test_swap_benchmark.py": 10,
    "tests/gpu_backend/test_attack_auth_flood.py": 10,
    "tests/workbench/test_gpuwb_cli.py": 9,
    "tests/kernelproxy/test_device_group.py": 9,
    "tests/gpu_backend/test_bad_stretch_input.py": 9,
}


#: Files that start a Ray cluster go last, when the other processes are finishing: Ray's
#: raylet gives up on its dashboard agent ~15 s after it starts, and its head on the raylet
#: 30 s after (neither a setting we found), so beside the first, heaviest files (a browser, a
#: Lab, thousands of fast-path ops) on a 2-core machine every start of tests/cluster's
#: cluster failed (2026-11-26: three full runs, 8 errors each; alone, or started later, the
#: same tests passed).
LAST_FILES = {"tests/cluster/test_ray_pool.py", "tests/cluster/test_ray_restart.py"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The slowest files first, longest first (SLOW_FILES), and the Ray files last
    (LAST_FILES); a file's tests stay together and in their order (a stable sort on the
    file alone)."""
    root = config.rootpath

    def cost(item) -> float:
        try:
            path = item.path.relative_to(root).as_posix()
        except ValueError:
            return 0.0
        return -1.0 if path in LAST_FILES else SLOW_FILES.get(path, 0.0)

    items[:] = sorted(items, key=lambda item: -cost(item))


def pytest_configure(config):
    from tests.close_guard import install
    install()   # (a stray second close raises where it is made: tests/close_guard.py)


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
