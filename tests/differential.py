"""The differential harness: one test body, two array modules, same answers.

``same(body)`` calls ``body(ref)`` and ``body(cp)``, where ``ref`` is NumPy
(CI) or local CuPy (``GPUWB_REFERENCE=cupy`` on a GPU machine) and ``cp`` is
the remote proxy. Both must return equal values (same shapes, dtypes and
values, compared on the host) or raise the same public exception class.

The two configurations go together: a NumPy reference with a pool of NumPy
devices (``GPUWB_TEST_DEVICES=cpu``, the default), a CuPy reference with a pool
of GPUs. Where NumPy and CuPy differ, ``same()`` checks that the remote follows
its reference; an assertion a test adds *after* ``same()`` about the outcome
itself (``assert isinstance(err, AxisError)``) states NumPy's behaviour and is
guarded by :data:`REFERENCE_IS_NUMPY`, with a comment naming CuPy's. Tests of
the proxy alone (the ``cp`` fixture, no reference) whose outcome depends on the
pool's array library are guarded by :data:`POOL_RUNS_NUMPY`.

A few of CuPy's rules the NumPy device follows too, so that code tried there runs on a GPU
(a NumPy array as a ufunc's operand refused, integer index arrays wrapping, floats cast to
integers as a GPU casts: tests/kernelproxy/test_newcomer_fidelity.py): there the remote
differs from a NumPy reference by design, and tests assert CuPy's outcome on ``cp`` itself.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np

from gpu_backend.protocol.errors import error_name

__all__ = ["Differential", "reference_module", "to_host", "assert_bitwise", "TEST_DEVICES",
           "REFERENCE_IS_NUMPY", "POOL_RUNS_NUMPY"]

#: The pool's devices for the test run (``cpu``: one NumPy device; GPU indices: CuPy devices).
TEST_DEVICES = os.environ.get("GPUWB_TEST_DEVICES", "cpu")


def reference_module():
    name = os.environ.get("GPUWB_REFERENCE", "numpy")
    if name == "cupy":
        import cupy
        return cupy
    return np


#: The differential reference is NumPy (CI), not local CuPy (a GPU machine).
REFERENCE_IS_NUMPY = reference_module() is np


def _pool_runs_numpy() -> bool:
    from gpu_backend.devices import parse_devices
    return all(spec.startswith("cpu") for spec in parse_devices(TEST_DEVICES))


#: The pool under test runs NumPy devices only (no GPU): CuPy-specific behaviour is absent there.
POOL_RUNS_NUMPY = _pool_runs_numpy()


def to_host(value: Any) -> Any:
    """Bring a result to the host: arrays of any module to NumPy, recursively."""
    if hasattr(value, "get") and hasattr(value, "dtype") and not isinstance(value, np.ndarray):
        return value.get()
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(v) for v in value)
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    return value


def _kind(value: Any) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return "array"
    if isinstance(value, (list, tuple)):
        return type(value).__name__
    return type(value).__name__


def assert_bitwise(a: Any, b: Any) -> None:
    """Two runs' results, item by item, of the same dtype and shape and the very same bits
    (a replayed loop against the same loop without replay: -0.0 is not 0.0)."""
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)), (x, y)


def assert_equal(expected: Any, actual: Any, path: str = "result") -> None:
    if isinstance(expected, (np.ndarray, np.generic)) or isinstance(actual, (np.ndarray, np.generic)):
        e, a = np.asarray(expected), np.asarray(actual)
        assert e.shape == a.shape, f"{path}: shape {a.shape} != expected {e.shape}"
        assert e.dtype == a.dtype, f"{path}: dtype {a.dtype} != expected {e.dtype}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=0, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(a, e, err_msg=path)
        return
    if isinstance(expected, (list, tuple)):
        assert type(expected) is type(actual), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_equal(e, a, f"{path}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(expected) == sorted(actual), \
            f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_equal(expected[key], actual[key], f"{path}[{key!r}]")
        return
    assert type(expected) is type(actual), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), f"{path}: {actual!r} != nan"
    else:
        assert expected == actual, f"{path}: {actual!r} != expected {expected!r}"


class Differential:
    def __init__(self, ref, cp, session) -> None:
        self.ref, self.cp, self.session = ref, cp, session

    def _run(self, body: Callable[[Any], Any], xp: Any) -> tuple[str, Any]:
        try:
            result = body(xp)
            if xp is self.cp:
                self.session.sync()  # an asynchronous op's error belongs to this body
            elif xp is not np:
                xp.cuda.get_current_stream().synchronize()  # a CUDA fault belongs to this body too
            return "ok", to_host(result)
        except Exception as exc:  # compared below
            return "error", exc

    def __call__(self, body: Callable[[Any], Any]) -> Any:
        expected = self._run(body, self.ref)
        actual = self._run(body, self.cp)
        if expected[0] == "error" or actual[0] == "error":
            assert expected[0] == actual[0], (
                f"reference gave {_describe(expected)}, remote gave {_describe(actual)}")
            e_name, a_name = error_name(expected[1]), error_name(actual[1])
            assert e_name == a_name, f"reference raised {e_name} ({expected[1]}), remote {a_name} ({actual[1]})"
            return actual[1]
        assert_equal(expected[1], actual[1])
        return actual[1]


def _describe(outcome: tuple[str, Any]) -> str:
    kind, value = outcome
    if kind == "error":
        return f"{type(value).__name__}: {value}"
    return f"value {value!r}"[:300]
