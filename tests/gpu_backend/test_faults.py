"""A GPU fault ends only the session that caused it (needs a GPU pool: GPUWB_TEST_DEVICES=0)."""

import pytest

import kernelproxy
from kernelproxy.modules import module_for

from tests.differential import POOL_RUNS_NUMPY

pytestmark = pytest.mark.skipif(POOL_RUNS_NUMPY, reason="a CUDA fault needs a GPU pool")


def test_cuda_fault_ends_only_its_session(pool):
    bystander = kernelproxy.connect(pool.address, pool.token)
    victim = kernelproxy.connect(pool.address, pool.token)
    try:
        keep = module_for(bystander).arange(10.0)
        cp = module_for(victim)
        bad = cp.arange(6, dtype=cp.int8).reshape(2, 3)[:, :2].view(cp.int16)
        with pytest.raises(RuntimeError, match="(?i)misaligned|context"):
            bad.get()                      # the copy kernel faults: the context is gone
        with pytest.raises(kernelproxy.SessionLostError):
            float(cp.arange(3).sum())      # the session ended with its context
        assert float(keep.sum()) == 45.0  # the other session never noticed
        with kernelproxy.connect(pool.address, pool.token) as fresh:
            assert float(module_for(fresh).arange(4).sum()) == 6.0
    finally:
        bystander.close()
        victim.close()
