"""On a GPU, a user's memory quota holds for every way a session allocates device memory.

Needs a GPU pool (``GPUWB_TEST_DEVICES=0``; skipped on the NumPy device, whose own
checks are tests/gpu_backend/test_quota_before_allocation.py). Each path asks for more than the
user's 64 MiB quota: device ops, uploads (whole and streamed), a custom kernel's
output, cuFFT (its plan's work area and output), sparse matrices (cuSPARSE's buffers and
products). Each must raise CuPy's OutOfMemoryError naming the quota, and the session's
memory pool must never have held more than the quota (its ``total_bytes``, read after
each attempt, and the peak the worker reports to the pool).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import build_modules, module_for

from tests.differential import POOL_RUNS_NUMPY, TEST_DEVICES
from tests.gpu_backend.test_users_pool import write_users
from tests.waiting import until

pytestmark = pytest.mark.skipif(POOL_RUNS_NUMPY, reason="CuPy's memory pool needs a GPU pool")

MiB = 1 << 20
QUOTA = 64 * MiB


@pytest.fixture(scope="module")
def quota_pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpu-quota") / "users.toml"
    tokens = write_users(path, {"erin": {"memory": QUOTA}})
    with LocalPool(devices=TEST_DEVICES, users_file=path, lease_timeout=60, spare_workers=2) as pool:
        yield pool, tokens["erin"]


@pytest.fixture
def gpu_quota(quota_pool):
    """A fresh session for each case: CuPy's pool keeps what a case's arrays left split
    (a free part of a larger block cannot be given back), which would count against the next;
    the next case begins once the last one's worker has ended."""
    pool, token = quota_pool
    with kernelproxy.connect(pool.address, token) as session:
        yield pool, session
    # a closed session's memory counts against the quota until its worker has ended
    assert until(lambda: not pool.door.sessions, 30)


def _peak_reported(pool, session) -> int:
    usage = pool.door.sessions[session.id].usage
    return int(usage.get("peak") or 0)


ELEMENTWISE = ("float32 x", "float32 y", "y = x * 2", "twice")
ODD = 2**20 + 7   # an FFT length with a large prime factor: cuFFT's work area is large


def _inputs(cp, m) -> dict:
    """What each path works on, made before the quota is filled (the sparse matrix from
    host arrays: CuPy's ``sparse.random`` needs more than the quota to draw its indices)."""
    sparse = m["cupyx.scipy.sparse"]
    rows, cols = 100, 10_000   # 100 dense rows of a 10 000 x 10 000 matrix: 8 MiB
    csr = sparse.csr_matrix((cp.ones(rows * cols, cp.float32),
                             cp.asarray(np.tile(np.arange(cols, dtype=np.int32), rows)),
                             cp.asarray(np.arange(0, rows * cols + 1, cols, dtype=np.int32).tolist()
                                        + [rows * cols] * (cols - rows), dtype=cp.int32)),
                            shape=(cols, cols))
    return {"x": cp.ones(4 * MiB, cp.float32),                                     # 16 MiB
            "odd": cp.ones(ODD, cp.complex64),                                      # 8 MiB
            "csr": csr}


FREE = 8 * MiB   # what is left of the quota when a path is tried

#: each needs 16 MiB or more, twice what is left free, through the path it names (the
#: kernel's output, cuFFT's work area and output, cuSPARSE's buffers): none may get round
#: the quota
PATHS = {
    "device op": lambda cp, m, i: cp.ones(4 * MiB, cp.float32),
    "broadcast op": lambda cp, m, i: i["x"][:64, None] * i["x"][None, :],
    "upload": lambda cp, m, i: cp.asarray(np.ones(4 * MiB, np.float32)),
    "streamed upload": lambda cp, m, i: cp.asarray(np.ones(16 * MiB, np.float32)),
    "custom kernel": lambda cp, m, i: cp.ElementwiseKernel(*ELEMENTWISE)(i["x"]),   # its output
    "fft": lambda cp, m, i: cp.fft.fft(i["odd"]),
    "fft plan": lambda cp, m, i: m["cupyx.scipy.fft"].get_fft_plan(i["odd"]),
    "sparse": lambda cp, m, i: m["cupyx.scipy.sparse"].random(40_000, 40_000, density=0.005,
                                                              format="csr", dtype=cp.float32),
    "sparse product": lambda cp, m, i: i["csr"].T @ i["csr"],   # dense 10 000 x 10 000
}


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_the_quota_holds_on_every_allocation_path(gpu_quota, path):
    pool, session = gpu_quota
    cp = module_for(session)
    modules = build_modules()
    figures = cp.get_default_memory_pool()
    held: dict = {}   # this case's arrays: let go at its end, passed or failed (a failure's
    try:              # traceback would keep them, and the next case would start short)
        held["inputs"] = _inputs(cp, modules)
        session.sync()
        figures.free_all_blocks()   # (cached blocks count against the grant as CuPy's pool holds them)
        held["filler"] = cp.empty(QUOTA - FREE - figures.used_bytes(), cp.uint8)
        session.sync()
        with pytest.raises(kernelproxy.OutOfMemoryError) as caught:
            held["result"] = path(cp, modules, held["inputs"])
            session.sync()
        text = str(caught.value)
        del caught
        assert "erin's memory quota is 64 MiB" in text, text
        assert figures.total_bytes() <= QUOTA
    finally:
        held.clear()
        cp.fft.config.clear_plan_cache()   # (a cached plan's work area is the session's)
        session.sync()
    assert float(cp.ones(MiB).sum()) == MiB          # the session goes on
    assert until(lambda: _peak_reported(pool, session) > 0, 10)
    assert _peak_reported(pool, session) <= QUOTA
