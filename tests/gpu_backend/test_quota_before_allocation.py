"""The memory quota holds before the NumPy device allocates, not after.

Under a 64 MiB quota, ``outer(ones(14142), ones(14142))`` (1.6 GB) took the worker from
136 MiB to 1.6 GB before the error. Ops whose output size follows from their arguments
are now refused first; the rest meet the worker's data limit, which turns NumPy's own
failure into the same OutOfMemoryError. Either way the worker's peak memory stays near
its quota, and the session goes on.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import build_modules, module_for

from tests.gpu_backend.test_users_pool import write_users

MiB = 1 << 20
QUOTA = 64 * MiB
N = 14142   # N * N float64: 1.6 GB


def _peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def quota_session(tmp_path_factory):
    path = tmp_path_factory.mktemp("quota") / "users.toml"
    tokens = write_users(path, {"dana": {"memory": QUOTA}})
    with LocalPool(devices="cpu", users_file=path, lease_timeout=30) as pool:
        with kernelproxy.connect(pool.address, tokens["dana"]) as session:
            worker = next(w for w in list(pool.door.host.workers.values())
                          if w.session is not None and w.session.sid == session.id)
            float(module_for(session).ones(N).sum())
            yield session, worker.process.pid, _peak_rss(worker.process.pid)


BIG_OPS = {
    "outer": lambda cp, a, b: cp.outer(a, b),
    "ufunc.outer": lambda cp, a, b: cp.multiply.outer(a, b),
    "broadcast *": lambda cp, a, b: a[:, None] * b,
    "broadcast ufunc": lambda cp, a, b: cp.add(a[:, None], b),
    "comparison": lambda cp, a, b: a[:, None] < b,
    "kron": lambda cp, a, b: cp.kron(a, b),
    "matmul": lambda cp, a, b: a[:, None] @ b[None, :],
    "tile": lambda cp, a, b: cp.tile(a, N),
    "repeat": lambda cp, a, b: cp.repeat(a, N),
    "repeat method": lambda cp, a, b: a.repeat(N),
    "concatenate": lambda cp, a, b: cp.concatenate([a] * N),
    "creation": lambda cp, a, b: cp.zeros((N, N)),
    # no rule sizes these: the worker's data limit stops them
    "indices": lambda cp, a, b: cp.indices((N, N)),
    "meshgrid": lambda cp, a, b: cp.meshgrid(a, b)[0],
}


@pytest.mark.parametrize("op", BIG_OPS.values(), ids=BIG_OPS.keys())
def test_an_op_past_the_quota_is_refused_before_it_allocates(quota_session, op):
    session, pid, start = quota_session
    cp = module_for(session)
    a, b = cp.ones(N), cp.ones(N)
    with pytest.raises(kernelproxy.OutOfMemoryError) as caught:
        float(op(cp, a, b).sum())
    assert "dana's memory quota is 64 MiB" in str(caught.value) \
        or "this session's memory limit is 64 MiB" in str(caught.value), str(caught.value)
    # the worker's high-water mark since it started serving: 1.6 GB would show
    assert _peak_rss(pid) < start + 3 * QUOTA + 300 * MiB
    assert float((a + b).sum()) == 2.0 * N   # the session goes on


def test_the_data_limit_error_is_cupys_class(quota_session):
    """NumPy's own MemoryError (past the worker's data limit, or refusing 931 GiB outright)
    reaches the client as CuPy's OutOfMemoryError, never a plain MemoryError: fuzzing found
    it from the ``repeat`` method and from SciPy's windows with a length of 10**12."""
    session, _pid, _start = quota_session
    cp = module_for(session)
    windows = build_modules()["cupyx.scipy.signal.windows"]
    for make in (lambda: cp.indices((N, N)), lambda: cp.arange(3.0).repeat(10**12),
                 lambda: windows.blackmanharris(10**12)):
        with pytest.raises(kernelproxy.OutOfMemoryError):
            float(make().sum())
    np.testing.assert_array_equal(cp.arange(3).get(), np.arange(3))
