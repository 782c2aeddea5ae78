"""User CUDA kernels: compiled and run in the session's own worker (GPU pools only)."""

import numpy as np
import pytest

from tests.differential import POOL_RUNS_NUMPY

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


_MODULE_SOURCE = r'''
template<typename T>
__global__ void scale(const T* x, T* y, T a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void offset(const float* x, float* y, float b, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = x[i] + b;
}
'''


@gpu_only
def test_raw_module_functions_and_name_expressions(cp):
    module = cp.RawModule(code=_MODULE_SOURCE, options=("-std=c++14",),
                          name_expressions=("scale<float>", "scale<double>"))
    x32, x64 = cp.arange(8, dtype=cp.float32), cp.arange(8, dtype=cp.float64)
    y32, y64 = cp.empty_like(x32), cp.empty_like(x64)
    module.get_function("scale<float>")((1,), (8,), (x32, y32, cp.float32(3), cp.int32(8)))
    module.get_function("scale<double>")((1,), (8,), (x64, y64, cp.float64(0.5), cp.int32(8)))
    np.testing.assert_array_equal(y32.get(), np.arange(8, dtype=np.float32) * 3)
    np.testing.assert_array_equal(y64.get(), np.arange(8) * 0.5)
    offset = module.get_function("offset")
    assert module.get_function("offset") is offset
    offset((1,), (8,), (x32, y32, cp.float32(1), cp.int32(8)))
    np.testing.assert_array_equal(y32.get(), np.arange(8, dtype=np.float32) + 1)
    with pytest.raises(Exception, match="(?i)not found|named symbol|no such|invalid"):
        module.get_function("missing")((1,), (1,), ())
        float(x32.sum())
    assert float(x32.sum()) == 28.0


def test_raw_module_arguments_are_checked_here(cp):
    with pytest.raises(NotImplementedError, match="path="):
        cp.RawModule(path="/tmp/kernels.cubin")
    with pytest.raises(TypeError, match="code and path"):
        cp.RawModule()
    with pytest.raises(TypeError, match="name_expressions"):
        cp.RawModule(code="", name_expressions=[1])
    module = cp.RawModule(code=_MODULE_SOURCE, name_expressions=["scale<float>"])
    assert module.name_expressions == ("scale<float>",) and module.code == _MODULE_SOURCE
    with pytest.raises(NotImplementedError, match="get_global"):
        module.get_global("x")


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="the NumPy device's refusal")
def test_raw_module_on_the_numpy_device_says_a_gpu_is_needed(cp, session):
    kernel = cp.RawModule(code=_MODULE_SOURCE).get_function("offset")
    x = cp.arange(4, dtype=cp.float32)
    with pytest.raises(NotImplementedError, match="custom CUDA kernels need a GPU"):
        kernel((1,), (4,), (x, x, cp.float32(1), cp.int32(4)))
        session.sync()
    assert float(x.sum()) == 6.0
