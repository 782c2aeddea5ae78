"""``cupy.fuse`` and ``cupy.vectorize``: a user's Python function applied to remote arrays.

CuPy compiles such a function into one kernel: ``fuse`` by tracing it with stand-in
arrays, ``vectorize`` by translating its source with ``cupyx.jit``.

``fuse`` does what CuPy does: the function runs once per argument signature (CuPy's
key: each array's dtype and ndim, each scalar's type) on stand-ins, on the client
(kernelproxy/fuse_trace.py); what they saw travels as a program of calls, which the
pool's CuPy fuses into the kernel CuPy builds for the function locally
(gpu_backend/devices/fused_functions.py): the same values to the last bit, one launch a
call. A function a program cannot say (a stand-in's shape or Python value, indexing, an
array from outside, a call CuPy's fusion does not trace) runs unfused instead, each of
its operations an ordinary op, queued without a round trip: the values of the same
operations in CuPy, not of its fused kernel. Inside ``fuse`` an array has no Python value
(``if x > 0:``, ``float(x)``): CuPy's ``TypeError``, as its tracer gives.

``vectorize`` on a GPU pool does what CuPy does: the function's source *text* (a
``def``, or the ``lambda`` found in its file as CuPy finds it) and the numbers, scalar
types and modules its global names stand for are sent; the pool checks the text against
a closed set of constructs and names and has CuPy's JIT translate it to a device
function (gpu_backend/devices/jit_vectorize.py). The text is never run as Python there.
So control flow on element values (``if x > 0:``, loops, ``max(x, y)``) works, with
CuPy's typing rules. On the NumPy device (no CUDA to translate to) it runs the function
on the client with the remote arrays themselves; control flow on element values there
stops with a ``NotImplementedError`` that says so.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import fuse_trace
from . import ndarray as nd
from .function_source import function_source, free_names, returns_tuple
from .functions import forwarded
from .state import active_session, proxy_cupy
from .stretch_key import FixedDefinition

__all__ = ["Fusion", "fuse", "vectorize", "piecewise"]

#: What a fused function accepts, as in CuPy (anything else is a TypeError)
_FUSE_ARGUMENT_TYPES = (nd.ndarray, np.ndarray, np.generic, int, float, complex, bool, type(None))


class Fusion:
    """A fused function (``cupy.fuse``): called with remote arrays, it launches the kernel
    of its traced program (one per argument signature, as CuPy caches them), or runs
    unfused where its program cannot be traced; called with anything else, it is the
    function itself.

    Attributes:
        func: the function before fusing.
        name: the kernel name it was given (or the function's name).
    """

    def __init__(self, func: Any, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__
        self._memo: dict[tuple, Any] = {}
        self._number = fuse_trace.fusion_number()   # (the pool's kernel cache of this one)
        self._label = f"cupy.fuse({self.name})"

    def __repr__(self) -> str:
        return f"<Fusion {self.name!r}>"

    def __call__(self, *args: Any) -> Any:
        if not any(isinstance(a, nd.ndarray) for a in args):
            return self.func(*args)
        if not all(isinstance(a, _FUSE_ARGUMENT_TYPES) for a in args):
            raise TypeError("Invalid argument type for '{}': ({})".format(
                self.name, ", ".join(repr(type(a)) for a in args)))
        session = active_session()
        if not session.settings.fuse or any(isinstance(a, np.ndarray) for a in args):
            return self._unfused(args)   # (GPUWB_FUSE=0; or a NumPy array: CuPy's refusal)
        key = fuse_trace.signature(args)
        program = self._memo.get(key)
        if program is None:
            program = self._traced(key, args)
        if program is _UNFUSED:
            return self._unfused(args)
        return nd.call(session, m.KIND_KERNEL, "fuse", program.want, program.definition,
                       args, {}, self._label)

    def _traced(self, key: tuple, args: tuple) -> Any:
        """The function's program for *args*' signature, kept (or, where it cannot be one,
        :data:`_UNFUSED`, kept too)."""
        try:
            program = fuse_trace.trace(self.func, args, self.name, self._number)
        except fuse_trace.Untraceable:
            program = _UNFUSED
        self._memo[key] = program   # (an error of the function's own is raised, as CuPy's)
        return program

    def _unfused(self, args: tuple) -> Any:
        nd.FUSING.depth += 1   # no Python scalar of an array in here, as in CuPy's fusion
        try:
            return self.func(*args)
        finally:
            nd.FUSING.depth -= 1

    def clear_cache(self) -> None:
        """Forget the traced programs and kernels (traced and compiled again at the next call)."""
        self._memo = {}
        self._number = fuse_trace.fusion_number()


#: A fused function's signature that runs unfused
_UNFUSED = object()


def fuse(*args: Any, **kwargs: Any) -> Any:
    """``cupy.fuse``: ``@fuse`` or ``@fuse(kernel_name=...)`` makes a :class:`Fusion`."""
    def wrapper(f: Any, kernel_name: str | None = None) -> Fusion:
        return Fusion(f, kernel_name)

    if len(args) == 1 and not kwargs and callable(args[0]):
        return functools.update_wrapper(wrapper(args[0]), args[0])
    return lambda f: functools.update_wrapper(wrapper(f, *args, **kwargs), f)


def _as_typed(arg: Any) -> Any:
    """A Python scalar as the NumPy scalar of its type: CuPy's ``vectorize`` types a
    Python ``int`` as int64 and a ``float`` as float64 (not as NumPy's weak scalars)."""
    if isinstance(arg, (bool, int, float, complex)) and not isinstance(arg, np.generic):
        return np.dtype(type(arg)).type(arg)
    return arg


def _element_control_flow(exc: Exception) -> bool:
    return isinstance(exc, ValueError) and "truth value of an array" in str(exc)


class vectorize:
    """``cupy.vectorize``: *pyfunc* applied elementwise, by running it on the broadcast
    remote arrays (see the module's docstring for what that cannot express)."""

    def __init__(self, pyfunc: Any, otypes: Any = None, doc: str | None = None,
                 excluded: Any = None, cache: bool = False, signature: Any = None) -> None:
        self.pyfunc = pyfunc
        self.__doc__ = doc or pyfunc.__doc__
        self.excluded = excluded
        self.cache = cache
        self.signature = signature
        self.otypes = None if otypes is None else "".join(np.dtype(t).char for t in otypes)
        if excluded is not None:
            raise NotImplementedError("cupy.vectorize does not support `excluded` option currently.")
        if signature is not None:
            raise NotImplementedError("cupy.vectorize does not support `signature` option currently.")

    def __call__(self, *args: Any) -> Any:
        if self.otypes is not None:
            raise NotImplementedError("cupy.vectorize does not support `otypes` currently")
        session = active_session()
        if session.device.get("kind") == "cupy":
            return self._translated(session, args)
        return self._on_the_client(args)

    def _translated(self, session: Any, args: tuple) -> Any:
        """The pool translates the function's text with CuPy's JIT (see the module)."""
        definition = getattr(self, "_definition", None)
        if definition is None:
            form, source = function_source(self.pyfunc)
            definition = self._definition = FixedDefinition(
                name=getattr(self.pyfunc, "__name__", "<lambda>"), form=form,
                source=source, names=free_names(self.pyfunc, proxy_cupy()))
            self._want = api.MULTI if returns_tuple(form, source) else api.ARRAY
        return nd.call(session, m.KIND_KERNEL, "vectorize", self._want, definition, args, {},
                       f"cupy.vectorize({definition['name']})")

    def _on_the_client(self, args: tuple) -> Any:
        cupy = proxy_cupy()
        arrays = [a for a in args if isinstance(a, nd.ndarray)]
        if not arrays:
            raise ValueError("Loop size is undecided")
        shape = cupy.broadcast_shapes(*(a.shape for a in arrays))
        typed = [_as_typed(a) for a in args]
        name = getattr(self.pyfunc, "__name__", "the function")
        try:
            result = self.pyfunc(*typed)
        except (ValueError, TypeError) as exc:
            if _element_control_flow(exc):
                raise NotImplementedError(
                    f"cupy.vectorize({name}) runs the function once on whole remote arrays, "
                    "each operation forwarded to gpu-workbench's pool; Python control flow "
                    "on element values (if/while, and/or/not, max/min of elements) needs "
                    "CuPy's JIT compiler, which the pool does not run on client code") from exc
            raise
        if isinstance(result, tuple):
            return tuple(self._filled(cupy, r, shape) for r in result)
        return self._filled(cupy, result, shape)

    @staticmethod
    def _filled(cupy: Any, value: Any, shape: tuple) -> Any:
        """One output at the broadcast shape, a new array as an elementwise kernel's is."""
        if isinstance(value, nd.ndarray):
            if value.shape == shape:
                return value
            return cupy.ascontiguousarray(cupy.broadcast_to(value, shape))
        if isinstance(value, (bool, int, float, complex, np.generic)):
            return cupy.full(shape, value, dtype=np.asarray(_as_typed(value)).dtype)
        raise TypeError(f"Invalid return type: {type(value).__name__}")


def piecewise(x: Any, condlist: Any, funclist: Any) -> Any:
    """``cupy.piecewise``: CuPy takes values only, never functions (a callable is
    CuPy's ``NotImplementedError``, raised here before anything is sent); forwarded."""
    if any(callable(func) for func in funclist):
        raise NotImplementedError("Callable functions are not supported currently")
    return forwarded("piecewise")(x, condlist, funclist)
