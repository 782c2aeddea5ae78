"""``cupyx.jit.rawkernel`` translated in the pool (issue 9): the client sends the kernel's
text and what its free names stand for (cupyx.jit's names, device functions with their own
text); the pool checks the text as a vectorized function's, with what a kernel adds
(indexing arrays, device attributes, cupyx.jit's functions), and never runs it.

The checks and the client side run everywhere; the translation needs CuPy on a GPU pool
(``GPUWB_TEST_DEVICES=cuda``), where the last tests launch kernels through a session and
compare them with NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_backend.devices.jit_vectorize import (VectorizeError, _Namespace, check_function,
                                               parse_function, resolve_names)
from kernelproxy.function_source import free_names, function_source

from kernelproxy.modules import build_modules

from tests.differential import POOL_RUNS_NUMPY


class Emitter:
    """Stands for cupyx.jit's function objects where CuPy is not installed."""


JIT_EXPRESSIONS = ("threadIdx", "blockDim", "blockIdx", "gridDim", "warpsize")
JIT = _Namespace("cupyx.jit", _expressions=frozenset(JIT_EXPRESSIONS),
                 **{n: object() for n in JIT_EXPRESSIONS},
                 **{n: Emitter() for n in ("grid", "gridsize", "syncthreads", "shared_memory",
                                           "atomic_add", "range", "shfl_sync", "laneid")})


def _kernel_name(name, value):
    kind, item = next(iter(value.items()))
    if kind == "module" and item == "jit":
        return JIT
    if kind == "jit":
        return getattr(JIT, item)
    if kind == "device":
        return Emitter()
    raise VectorizeError(f"{name}: not a kernel's name")


def _checked(source: str, consts: dict | None = None) -> None:
    # (cupy's numeric types stand in numpy's namespace where CuPy is not installed)
    consts = {"jit": {"module": "jit"}, "cupy": {"module": "numpy"}, **(consts or {})}
    names = resolve_names(consts, None, _kernel_name)
    check_function(parse_function(source, "def"), names, None, emitters=(Emitter,))


#: The proxy's modules under the names CuPy's reduction example uses (the kernel below
#: finds them as its globals, as a user's kernel would)
jit = build_modules()["cupyx.jit"]
cupy = build_modules()["cupy"]


def reduction(x, y, size):
    """CuPy's examples/jit/reduction_atomic.py, undecorated: checked here as text, launched
    on a GPU pool below."""
    tid = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x
    value = cupy.float32(0)
    for i in range(tid, size, ntid):
        value += x[i]
    smem = jit.shared_memory(cupy.float32, 1024)
    smem[jit.threadIdx.x] = value
    jit.syncthreads()
    if jit.threadIdx.x == cupy.uint32(0):
        value = cupy.float32(0)
        for i in range(jit.blockDim.x):
            value += smem[i]
        jit.atomic_add(y, 0, value)


# ------------------------------------------------------------------ what passes the checks
def test_cupys_reduction_example_passes():
    form, source = function_source(reduction)
    assert free_names(reduction, cupy) == {"jit": {"module": "jit"}, "cupy": {"module": "cupy"}}
    _checked(source)


def test_indexing_grids_and_device_functions_pass():
    _checked("def f(a, b, n, m):\n    x, y = jit.grid(2)\n    if x < n and y < m:\n"
             "        b[x, y] = helper(a[x, y]) + a.shape[0] + a.size\n")
    _checked("def f(a):\n    t = jit.threadIdx\n    a[t.x] = jit.shfl_sync(0xffffffff, a[t.x], 0, width=32)\n")
    _checked("def f(a, v):\n    jit.atomic_add(a, (1, 2), v)\n")
    _checked("def f(a):\n    i = grid(1)\n    a[i] = laneid()\n", {"grid": {"jit": "grid"},
                                                               "laneid": {"jit": "laneid"}})


# ------------------------------------------------------------------ what the pool refuses
@pytest.mark.parametrize("source, why", [
    ("def f(a):\n    a[1:3] = 0", "Slice"),
    ("def f(a):\n    return a.__class__", "not available"),
    ("def f(a):\n    return a.__init__", "not available"),
    ("def f(a):\n    return a.dtype", "not available"),
    ("def f(a):\n    jit.cg.this_grid()", "not available"),
    ("def f(a):\n    jit.thrust.sort(a)", "not available"),
    ("def f(a):\n    jit.rawkernel()", "not available"),
    ("def f(a):\n    jit._compile", "not available"),
    ("def f(a):\n    g = jit.grid\n    a[0] = g(1)", "only numbers"),
    ("def f(a):\n    a[0] = len((0,) * 100000000)", "tuple"),
    ("def f(a):\n    t = (30000000,)\n    a[0] = 3 ** t[0]", "tuple"),
    ("def f(a):\n    k = 10 ** 9\n    a[0] = 3 ** k", "powers and shifts"),
    ("def f(a):\n    k = 4000\n    a[0] = 1 << k", "powers and shifts"),
    ("def f(a):\n    jit.shared_memory(cupy.float32, 8, evil=1)", "keyword"),
    ("def f(a):\n    import os", "Import"),
    ("def f(a):\n    a[0] = 'x'", "str constant"),
    ("def f(a):\n    jit = 1", "rebound"),
])
def test_the_pool_refuses_what_it_does_not_translate(source, why):
    with pytest.raises(VectorizeError, match=why):
        _checked(source)


def test_a_vectorized_function_still_may_not_index():
    names = resolve_names({}, None)
    with pytest.raises(VectorizeError, match="indexing"):
        check_function(parse_function("def f(a):\n    return a[0]", "def"), names, None)


def test_kernel_names_are_refused_where_the_pool_does_not_know_them():
    for bad in ({"x": {"module": "os"}}, {"x": {"evil": 1}}, {"x": [1]}):
        with pytest.raises(VectorizeError):
            resolve_names(bad, None, _kernel_name)
    with pytest.raises(VectorizeError):   # a vectorized function has no cupyx.jit
        resolve_names({"jit": {"module": "jit"}}, None)


# ------------------------------------------------------------------ the client's side
def test_the_client_sends_text_and_jit_names(cp):
    assert build_modules()["cupyx"].jit is jit
    with pytest.warns(FutureWarning, match="experimental"):
        device = jit.rawkernel(device=True)

    @device
    def twice(v):
        return v * 2

    with pytest.warns(FutureWarning):
        decorate = jit.rawkernel()

    @decorate
    def kernel(x, y):
        i = jit.grid(1)
        if i < x.size:
            y[i] = twice(x[i]) + math.pi

    definition = kernel.definition()
    assert definition["form"] == "def" and definition["source"].startswith("@decorate\ndef kernel")
    assert definition["mode"] == "cuda"
    names = definition["names"]
    assert names["jit"] == {"module": "jit"} and names["math"] == {"module": "math"}
    assert names["twice"]["device"]["source"].startswith("@device\ndef twice(v):")
    tree = parse_function(definition["source"], "def")
    assert tree.decorator_list == []   # never run
    with pytest.raises(RuntimeError, match="Python layer"):
        jit.syncthreads()
    with pytest.raises(AttributeError, match="not forwarded"):
        jit.thrust
    assert free_names(kernel._func, cp)["twice"] == {"device": twice.definition()}
    assert function_source(kernel._func)[0] == "def"


def test_arguments_are_checked_as_cupy_does(cp):
    with pytest.warns(FutureWarning):
        @jit.rawkernel()
        def k(x):
            x[0] = 1
    with pytest.raises(TypeError, match="is not supported for RawKernel"):
        k((1,), (1,), ([1, 2],))


def test_a_device_function_calling_itself_is_refused_as_in_cupy(cp):
    with pytest.warns(FutureWarning):
        @jit.rawkernel(device=True)
        def again(v):
            return again(v)
    with pytest.raises(ValueError, match="Recursive"):
        again.definition()


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="on the NumPy device only")
def test_the_numpy_device_says_a_gpu_is_needed(cp):
    with pytest.warns(FutureWarning):
        @jit.rawkernel()
        def k(x):
            x[0] = 1
    x = cp.zeros(4)
    k((1,), (1,), (x,))
    with pytest.raises(NotImplementedError, match="custom CUDA kernels need a GPU"):
        x.get()


# ------------------------------------------------------------------ on a GPU pool
@pytest.mark.skipif(POOL_RUNS_NUMPY, reason="CuPy's JIT translates on a GPU pool")
@pytest.mark.filterwarnings("ignore::FutureWarning")
class TestTranslatedInThePool:
    def test_cupys_reduction_example(self, cp):
        kernel = jit.rawkernel()(reduction)
        host = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
        x, y = cp.asarray(host), cp.zeros((1,), dtype=cp.float32)
        kernel[64, 1024](x, y, cp.uint32(x.size))
        assert abs(float(y[0]) - host.sum(dtype=np.float64)) < 1e-2

    def test_grid_2d_and_a_device_function(self, cp):

        @jit.rawkernel(device=True)
        def scaled(v, k):
            return v * k

        @jit.rawkernel()
        def copy2d(a, b, n, m):
            x, y = jit.grid(2)
            if x < n and y < m:
                b[x, y] = scaled(a[x, y], 3)

        a = cp.arange(20).reshape(4, 5)
        b = cp.empty_like(a)
        copy2d((1,), (4, 5), (a, b, 4, 5))
        np.testing.assert_array_equal(b.get(), np.arange(20).reshape(4, 5) * 3)

    def test_translation_errors_are_cupys(self, cp):

        @jit.rawkernel()
        def bad():
            x, = jit.grid(1)   # cannot unpack an int

        bad((1,), (1,), ())
        with pytest.raises(ValueError):
            cp.cuda.Device().synchronize()
