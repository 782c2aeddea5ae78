"""Matrix products made inside a held stretch's graphs (devices/product_capture.py,
devices/cupy_products.py): which ones the rule takes, what the NumPy device refuses while the
worker captures, and, on a GPU, cuBLAS's GEMM captured against CuPy's eager product, bit for
bit. (End to end through a pool: test_stretch_replay.py's product tests, on both devices.)"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.devices.product_capture import product_operands, stretch_refusal
from gpu_backend.protocol import messages as m

OPERATOR, FUNCTION, METHOD = m.KIND_OPERATOR, m.KIND_FUNCTION, m.KIND_METHOD


def _ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def test_the_rule_takes_matrices_and_vectors_of_one_float_dtype_and_nothing_else_given():
    a, b, v = _ones(4, 3), _ones(3, 5), _ones(3)
    assert product_operands(OPERATOR, "matmul", None, [a, b], {}) == (a, b)
    assert product_operands(FUNCTION, "dot", None, [a, v], {}) == (a, v)
    assert product_operands(METHOD, "dot", a, [b], {}) == (a, b)
    assert product_operands(FUNCTION, "matmul", None, [a, b], {"out": None}) == (a, b)
    assert product_operands(FUNCTION, "matmul", None, [a, b], {"out": _ones(4, 5)}) is None
    assert product_operands(FUNCTION, "matmul", None, [a, b, None], {}) is None
    assert product_operands(FUNCTION, "matmul", None, [_ones(2, 4, 3), b], {}) is None
    assert product_operands(FUNCTION, "matmul", None, [a, _ones(3, 5, dtype=np.float64)], {}) is None
    assert product_operands(FUNCTION, "matmul", None, [_ones(4, 3, dtype=np.float16),
                                                       _ones(3, 5, dtype=np.float16)], {}) is None
    assert product_operands(FUNCTION, "matmul", None, [_ones(4, 3, dtype=np.int32),
                                                       _ones(3, 5, dtype=np.int32)], {}) is None
    assert product_operands(FUNCTION, "matmul", None, [a, 2.0], {}) is None
    assert product_operands(FUNCTION, "tensordot", None, [a, b], {}) is None
    c8 = _ones(3, 3, dtype=np.complex64)
    assert product_operands(OPERATOR, "matmul", None, [c8, c8], {}) == (c8, c8)


def test_the_numpy_device_refuses_under_the_workers_capture_what_a_gpu_would():
    a, b = _ones(4, 3), _ones(3, 5)
    assert stretch_refusal(OPERATOR, "matmul", None, [a, b], {}) is None          # made
    refused = stretch_refusal(OPERATOR, "matmul", None, [_ones(2, 4, 3), b], {})
    assert isinstance(refused, NotImplementedError) and "cuBLAS" in str(refused)
    assert stretch_refusal(FUNCTION, "dot", None, [a, b], {"out": _ones(4, 5)}) is not None
    assert stretch_refusal(FUNCTION, "matmul", None, [a, _ones(3, 5, dtype=np.float64)], {})
    ints = _ones(4, 3, dtype=np.int64), _ones(3, 5, dtype=np.int64)
    assert stretch_refusal(FUNCTION, "matmul", None, list(ints), {}) is None       # CuPy's kernel
    assert stretch_refusal(FUNCTION, "dot", None, [_ones(3), _ones(3)], {}) is None   # a sum
    assert stretch_refusal(FUNCTION, "add", None, [a, a], {}) is None


def _gpu():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU")
    except Exception:   # (CuPy without a driver)
        pytest.skip("no GPU")
    return cupy


CASES = [((256, 64), (64, 256), "f4", None), ((256, 256), (256, 10), "f4", "T"),
         ((1000, 32), (32,), "f4", None), ((300,), (300, 70), "f4", None),
         ((33, 17), (17, 65), "f4", "::2"), ((200, 300), (300, 100), "f8", None),
         ((64, 64), (64, 64), "c8", None), ((50, 40), (40,), "c16", None),
         ((8, 64, 32), (8, 32, 48), "f4", None), ((2, 4, 16, 8), (2, 4, 8, 16), "f4", None),
         ((3, 20, 30), (3, 30, 10), "f8", None), ((4, 6, 6), (4, 6, 6), "c8", "swap")]


@pytest.mark.parametrize("shape_a,shape_b,dtype,how", CASES)
def test_a_product_captured_by_cublas_gives_cupys_eager_bits(shape_a, shape_b, dtype, how):
    cp = _gpu()
    from gpu_backend.devices.cupy_products import CapturedProducts
    rng = np.random.default_rng(7)

    def made(shape, transposed=False):
        host = rng.standard_normal(shape[::-1] if transposed else shape)
        if np.dtype(dtype).kind == "c":
            host = host + 1j * rng.standard_normal(host.shape)
        x = cp.asarray(host.astype(dtype))
        return x.T if transposed else x

    a = made(shape_a, how == "T")
    if how == "swap":   # (a batch whose matrices are transposed: copied C-contiguous first)
        a = made(shape_a).swapaxes(-1, -2)
    if how == "::2":
        a = cp.asarray(rng.standard_normal((2 * shape_a[0], shape_a[1])).astype(dtype))[::2]
    b = made(shape_b)
    products = CapturedProducts(cp)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            c = products.gemm(a, b)
        finally:
            graph = stream.end_capture()
        assert c is not None
        for scale in (1.0, -0.75):   # (the graph reads its operands' memory at each launch)
            a[...] = a * scale
            graph.launch(stream)
            eager = a @ b
            stream.synchronize()
            assert c.shape == eager.shape and c.dtype == eager.dtype
            assert c.get().tobytes() == eager.get().tobytes()


def test_products_the_graphs_cannot_make_are_left_to_cupy():
    cp = _gpu()
    from gpu_backend.devices.cupy_products import CapturedProducts
    products = CapturedProducts(cp)
    v = cp.arange(5, dtype=cp.float32)
    assert products.gemm(v, v) is None                                  # two vectors
    assert products.gemm(v.reshape(1, 5), v.reshape(5, 1)) is None      # a row by a column
    assert products.gemm(cp.ones((0, 3), cp.float32), cp.ones((3, 2), cp.float32)) is None
    assert products.gemm(cp.ones((2, 3), cp.float32), cp.ones((4, 2), cp.float32)) is None
    assert products.gemm(cp.ones((2, 4, 3), cp.float32), cp.ones((3, 3, 5), cp.float32)) is None
    assert products.gemm(cp.ones((2, 4, 3), cp.float32), cp.ones((2, 0, 5), cp.float32)) is None
