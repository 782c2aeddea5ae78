"""``cupy.vectorize`` translated in the pool (issue 9): the client finds the function's text
and free names as CuPy's JIT does; the pool parses and checks the text against a closed
set of constructs and names before CuPy's translator sees it, and never runs it.

The checks and the client side run everywhere; the translation itself needs CuPy on a
GPU pool (``GPUWB_TEST_DEVICES=cuda``), where the last tests run it through a session.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_backend.devices.jit_vectorize import (VectorizeError, check_function, parse_function,
                                               resolve_names)
from kernelproxy.function_source import free_names, function_source, returns_tuple

from tests.differential import POOL_RUNS_NUMPY

SCALE = 2.5


def _checked(source: str, form: str = "def", consts: dict | None = None) -> None:
    names = resolve_names(consts or {}, None)
    check_function(parse_function(source, form), names, None)


# ------------------------------------------------------------------ what passes the checks
def relu_like(x, y):
    """A docstring, dropped."""
    if x > y:
        return x * SCALE
    elif x < 0:
        return -x
    total = 0
    for i in range(3):
        total += i
        if total > 10:
            break
    while total < 5:
        total = total + 1
    return min(x, y) + total + math.pi + (1 if x else 2)


def test_an_ordinary_function_passes():
    form, source = function_source(relu_like)
    assert form == "def" and source.startswith("def relu_like(x, y):")
    names = free_names(relu_like, None)
    assert names == {"SCALE": 2.5, "math": {"module": "math"}}
    _checked(source, form, names)
    assert not returns_tuple(form, source)


def test_a_lambda_is_found_in_its_file():
    f = lambda x: x * 2 if x > 0 else -x  # noqa: E731
    form, source = function_source(f)
    assert form == "lambda" and source == "lambda x: x * 2 if x > 0 else -x"
    tree = parse_function(source, form)
    assert tree.name == "_lambda_kernel"
    _checked(source, form)


def test_two_lambdas_on_one_line_are_ambiguous_as_in_cupy():
    f, _g = (lambda x: x), (lambda x: x + 1)  # noqa: E731
    with pytest.raises(ValueError, match="Multiple callables"):
        function_source(f)


def test_tuple_returns_are_seen():
    def two(x):
        t = (x, x + 1)
        return t
    assert returns_tuple(*function_source(two))
    assert returns_tuple("lambda", "lambda x: (x, x)")


def test_free_names_by_kind():
    helper = [1, 2]

    def uses(x):
        return x * np.float32(SCALE) + helper[0] + math.e

    names = free_names(uses, None)
    assert names == {"np": {"module": "numpy"}, "SCALE": 2.5, "math": {"module": "math"}}


# ------------------------------------------------------------------ what the pool refuses
@pytest.mark.parametrize("source, why", [
    ("def f(x):\n    import os\n    return x", "Import"),
    ("def f(x):\n    return x.__class__", "not available"),
    ("def f(x):\n    return __import__", "not available"),
    ("def f(x):\n    return 'text'", "str constant"),
    ("def f(x):\n    return [x]", "List"),
    ("def f(x):\n    return (lambda y: y)(x)", "cannot be called"),
    ("def f(x):\n    y = lambda z: z\n    return x", "Lambda"),
    ("def f(x):\n    return math.factorial(10**6)", "not available"),
    ("def f(x):\n    return math.__loader__", "not available"),
    ("def f(x):\n    return np.sin(x)", "not available"),            # numpy ufuncs only fold
    ("def f(x):\n    return np.linalg", "not available"),
    ("def f(x):\n    return np.random.rand", "not available"),
    ("def f(x):\n    return 2 ** 10 ** 10", "powers and shifts"),
    ("def f(x):\n    return 1 << 4000", "powers and shifts"),
    ("def f(x):\n    return x if [] else x", "List"),
    # what a security review found reachable before the bindings check (folding in the pool)
    ("def f(x):\n    return len((0,) * 100000000)", "tuple"),
    ("def f(x):\n    t = (30000000,)\n    return x + (3 ** t[0] > 0)", "tuple"),
    ("def f(x):\n    return (x, 1)[0]", "tuple|indexing"),
    ("def f(x):\n    d = np.dtype\n    return d(np.float32)(x)", "only numbers"),
    ("def f(x):\n    cp = np\n    return x", "only numbers|rebound"),
    ("def f(x):\n    np = 1\n    return x", "rebound"),
    ("def f(x):\n    for math in range(3):\n        x = x + 1\n    return x", "rebound"),
    ("def f(x):\n    return np.void(100000000)", "not available"),
    ("def f(x):\n    return np.str_(np)", "not available"),
    ("def f(x):\n    return np.object_(x)", "not available"),
    ("def f(x):\n    return np.float32(x, **{})", "keyword"),
    ("def f(x, *rest):\n    return x", "positional"),
    ("def f(x, y=1):\n    return x", "positional"),
    ("def f(x):\n    with x:\n        return x", "With"),
    ("def f(x):\n    global y\n    return x", "Global"),
    ("def f(x):\n    return [i for i in x]", "ListComp"),
    ("def f(x):\n    return f'{x}'", "JoinedStr"),
    ("def f(x):\n    return SCALE(x)", "cannot be called"),
    ("def f(x):\n    return np.dtype(\"[('a', 'i4')]\").type(x)", "numeric"),
    ("def f(x):\n    return np.dtype('f', 'g').type(x)", "one name or type code"),
    ("def f(x):\n    return np.dtype('f').names", "not available"),
])
def test_the_pool_refuses_what_it_does_not_translate(source, why):
    consts = {"math": {"module": "math"}, "np": {"module": "numpy"}, "SCALE": 2.5}
    with pytest.raises(VectorizeError, match=why):
        _checked(source, "def", consts)


def test_real_and_imag_of_values_only():
    _checked("def f(z):\n    return z.real + (z * 2).imag", "def")
    for attr in ("conj", "__class__", "dtype"):
        with pytest.raises(VectorizeError):
            _checked(f"def f(z):\n    return z.{attr}", "def")


def test_dtype_type_codes_fold_as_in_cupy():
    _checked("def f(x):\n    return np.dtype('f').type(x) + np.float64(1)", "def",
             {"np": {"module": "numpy"}})
    _checked("def f(x):\n    return np.dtype(t).type(x)", "def",
             {"np": {"module": "numpy"}, "t": {"type": "int16"}})


def test_the_text_must_be_one_function():
    for source, form in [("x = 1", "def"), ("def f(x): return x\ndef g(x): return x", "def"),
                         ("x + 1", "lambda"), ("def f(x:", "def"), ("1", "other")]:
        with pytest.raises(VectorizeError):
            parse_function(source, form)
    with pytest.raises(VectorizeError, match="at most"):
        parse_function("def f(x):\n" + "    x = x + 1\n" * 10000 + "    return x", "def")


def test_names_are_numbers_types_or_named_modules():
    names = resolve_names({"a": 1, "b": 2.5, "t": {"type": "float32"}, "m": {"module": "math"}}, None)
    assert names["a"] == 1 and names["t"] is np.float32
    assert names["m"].sqrt is math.sqrt and not hasattr(names["m"], "factorial")
    assert names["range"] is range   # the allowed builtins
    for bad in ({"x": "text"}, {"x": [1]}, {"x": {"module": "os"}}, {"__x": 1},
                {"x": {"type": "object"}}, {"x": {"module": "math", "extra": 1}},
                {"x": {"type": ["V", 100]}}):
        with pytest.raises((VectorizeError, ValueError)):
            resolve_names(bad, None)


def test_decorators_are_dropped_not_run():
    tree = parse_function("@evil()\ndef f(x):\n    return x", "def")
    assert tree.decorator_list == []


# ------------------------------------------------------------------ through a session
@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="on the NumPy device only")
def test_on_the_numpy_device_the_function_runs_on_the_client(cp):
    v = cp.vectorize(lambda x, y: x * y + 1)
    np.testing.assert_array_equal(v(cp.arange(4.0), 2.0).get(), np.arange(4.0) * 2 + 1)


@pytest.mark.skipif(POOL_RUNS_NUMPY, reason="CuPy's JIT translates on a GPU pool")
class TestTranslatedInThePool:
    def test_control_flow_on_elements(self, cp):
        v = cp.vectorize(relu_like)
        x, y = np.linspace(-3, 3, 13), np.linspace(1, -1, 13)
        expected = np.vectorize(relu_like)(x, y)
        np.testing.assert_allclose(v(cp.asarray(x), cp.asarray(y)).get(), expected, rtol=1e-12)

    def test_lambda_and_tuple_results(self, cp):
        relu = cp.vectorize(lambda x: x if x > 0 else 0)
        np.testing.assert_array_equal(relu(cp.arange(-3, 3)).get(), [0, 0, 0, 0, 1, 2])

        def both(x):
            return x + 1, x * 2
        a, b = cp.vectorize(both)(cp.arange(3))
        np.testing.assert_array_equal(a.get(), [1, 2, 3])
        np.testing.assert_array_equal(b.get(), [0, 2, 4])

    def test_cupy_ufuncs_and_types(self, cp):
        def f(x):
            return cp.sqrt(cp.float32(x)) + math.pi
        out = cp.vectorize(f)(cp.arange(4))
        assert out.dtype == np.float32 or out.dtype == np.float64
        np.testing.assert_allclose(out.get(), np.sqrt(np.arange(4)) + math.pi, rtol=1e-6)

    def test_a_refused_construct_is_a_clear_error_and_the_session_goes_on(self, cp):
        def sneaky(x):
            return cp.cuda.runtime.deviceReset()
        with pytest.raises(TypeError, match="not available in a vectorized function"):
            cp.vectorize(sneaky)(cp.arange(3)).get()
        assert int(cp.arange(3).sum()) == 3
