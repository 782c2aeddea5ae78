"""User CUDA kernels: compiled and run in the session's own worker (GPU pools only)."""

import numpy as np
import pytest

from .differential import POOL_RUNS_NUMPY

gpu_only = pytest.mark.skipif(POOL_RUNS_NUMPY, reason="custom CUDA kernels need a GPU pool")


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="the NumPy device's refusal")
def test_numpy_device_says_a_gpu_is_needed(cp, session):
    k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2", "double_it")
    with pytest.raises(NotImplementedError, match="custom CUDA kernels need a GPU"):
        k(cp.arange(3, dtype=cp.float32))
        session.sync()
    assert float(cp.arange(3).sum()) == 3.0


@gpu_only
def test_elementwise_kernel(cp):
    k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "sq_diff")
    x = cp.arange(10, dtype=cp.float32)
    np.testing.assert_array_equal(k(x, cp.float32(2.0)).get(), (np.arange(10, dtype=np.float32) - 2) ** 2)
    out = cp.empty(10, dtype=cp.float32)
    assert k(x, x, out) is out and float(out.sum()) == 0.0


@gpu_only
def test_reduction_kernel(cp):
    l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    x = cp.arange(12, dtype=cp.float64).reshape(3, 4)
    np.testing.assert_allclose(l2(x, axis=1).get(), np.sqrt((np.arange(12.0).reshape(3, 4) ** 2).sum(1)))


@gpu_only
def test_raw_kernel(cp):
    add = cp.RawKernel(r'''
    extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }''', "add")
    a = cp.arange(1000, dtype=cp.float32)
    c = cp.zeros(1000, dtype=cp.float32)
    add((4,), (256,), (a, a, c, np.int32(1000)))
    np.testing.assert_array_equal(c.get(), 2 * np.arange(1000, dtype=np.float32))


@gpu_only
def test_compile_error_is_clear_and_the_session_goes_on(cp, session):
    broken = cp.ElementwiseKernel("float32 x", "float32 y", "y = x +* 2", "broken")
    with pytest.raises(RuntimeError):
        broken(cp.arange(3, dtype=cp.float32))
        session.sync()
    assert float(cp.arange(4).sum()) == 6.0
