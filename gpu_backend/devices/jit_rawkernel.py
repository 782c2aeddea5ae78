"""``cupyx.jit.rawkernel`` of a client's function, translated in the pool by CuPy's JIT.

CuPy's ``@jit.rawkernel()`` reads the decorated function's source when the kernel is
first launched, translates it to a CUDA ``__global__`` function for the argument types
of that launch (arrays by dtype, dimensions and contiguity; scalars by type) and compiles
it with NVRTC. The pool does the same from the source *text* the client sends, checked
as a vectorized function's is (jit_vectorize.py: parsed, never executed, imported or
compiled as Python; a closed set of constructs and names) with what a kernel adds:
indexing arrays, the attributes of device values (``threadIdx.x``, ``a.shape``,
``a.size``), ``cupyx.jit``'s names (``grid``, ``shared_memory``, ``syncthreads``, the
atomics and warp shuffles; not ``cg``, ``cub`` or ``thrust``) and device functions
(``@jit.rawkernel(device=True)``), whose text comes with the kernel's and is checked the
same way. The generated CUDA C++ is device code, compiled and launched in the session's
own process and context as any ``RawKernel`` a client sends.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol.api import JIT_EXPRESSIONS, JIT_NAMES
from .jit_vectorize import VectorizeError, _Namespace, check_function, parse_function, resolve_names

__all__ = ["JitKernel"]

#: How deep device functions may call device functions (each level's text comes with the
#: kernel's).
MAX_DEPTH = 16
_FIELDS = {"source", "form", "names", "name", "mode"}


def _jit_parts() -> tuple:
    """CuPy's translator and its types (its internals: the pool's CuPy is the one tested)."""
    try:
        import cupyx.jit as jit
        from cupy._core import core
        from cupyx.jit import _compile, _cuda_typerules, _cuda_types, _internal_types
    except (ImportError, AttributeError) as exc:
        raise NotImplementedError(f"this pool's CuPy has no JIT translator for "
                                  f"cupyx.jit.rawkernel ({exc})") from None
    return jit, core, _compile, _cuda_typerules, _cuda_types, _internal_types


class _Definition:
    """A kernel's or device function's checked tree and the values of its free names."""

    def __init__(self, cupy: Any, definition: Any, depth: int) -> None:
        if not isinstance(definition, dict):
            raise TypeError("a jit kernel's definition is a map")
        unknown = set(definition) - _FIELDS
        if unknown:
            raise TypeError(f"unexpected jit kernel fields: {sorted(unknown)}")
        if depth > MAX_DEPTH:
            raise VectorizeError(f"device functions nest more than {MAX_DEPTH} deep")
        mode = definition.get("mode", "cuda")
        if mode not in ("cuda", "numpy"):
            raise ValueError(f"mode must be 'cuda' or 'numpy', not {mode!r}")
        self.mode = mode
        self.source = definition.get("source")
        if definition.get("form") != "def":
            raise VectorizeError("a jit kernel is the source of a def")
        self.tree = parse_function(self.source, "def")
        jit, _core, _compile, _typerules, _types, internal = _jit_parts()
        self._internal = internal
        namespace = _Namespace("cupyx.jit", _expressions=frozenset(JIT_EXPRESSIONS),
                               **{name: getattr(jit, name) for name in JIT_NAMES})

        def kernel_name(name: str, value: dict) -> Any:
            kind, item = next(iter(value.items()))
            if kind == "module" and item == "jit":
                return namespace
            if kind == "jit" and item in JIT_NAMES:
                return getattr(namespace, item)
            if kind == "device":
                return _device_function(cupy, item, depth + 1)
            if kind == "kernel" and isinstance(item, str):
                return _global_function(item)
            raise VectorizeError(f"{name}: a kernel's global names may be numbers, NumPy scalar "
                                 "types, math, numpy, cupy, cupyx.jit and its names, or device "
                                 "functions")

        self.names = resolve_names(definition.get("names", {}), cupy, kernel_name)
        check_function(self.tree, self.names, cupy, emitters=(internal.BuiltinFunc,))


def _device_function(cupy: Any, definition: Any, depth: int) -> Any:
    """A ``@jit.rawkernel(device=True)`` function the kernel calls: translated as CuPy
    translates one, a ``__device__`` function per tuple of argument types, written once
    into the kernel's code."""
    checked = _Definition(cupy, definition, depth)
    _compile, internal = _jit_parts()[2], checked._internal

    class DeviceFunction(internal.BuiltinFunc):
        def call(self, env: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TypeError(f"{checked.tree.name}() takes positional arguments only")
            args = [internal.Data.init(x, env) for x in args]
            in_types = tuple(x.ctype for x in args)
            generated = env.generated
            found = generated.device_function.get((self, in_types))
            if found is None:
                if (self, in_types) in generated.device_function:
                    raise ValueError("Recursive function is not supported.")
                name = checked.tree.name
                if generated.device_function:
                    name += "_" + str(len(generated.device_function))
                generated.device_function[(self, in_types)] = None
                code, fenv = _compile._transpile_function(
                    checked.tree, name, "__device__", env.mode, checked.names, in_types, None,
                    generated, source=checked.source)
                found = generated.device_function[(self, in_types)] = (name, fenv.ret_type)
                generated.add_code(code)
            name, ret_type = found
            return internal.Data(f"{name}({', '.join(x.code for x in args)})", ret_type)

    return DeviceFunction()


def _global_function(name: str) -> Any:
    """A ``__global__`` kernel named in a kernel: CuPy's error when it is called."""
    internal = _jit_parts()[5]

    class GlobalFunction(internal.BuiltinFunc):
        def call(self, env: Any, *args: Any, **kwargs: Any) -> Any:
            raise TypeError(f"Calling __global__ function {name} from __global__ function "
                            "is not allowed.")

    return GlobalFunction()


def _dims(value: Any, what: str) -> tuple:
    """A launch's grid or block: one to three positive ints (msgpack sends lists)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 3 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        raise TypeError(f"a kernel's {what} is one to three ints")
    return tuple(int(v) for v in value)


class JitKernel:
    """One ``@jit.rawkernel()`` kernel in a session: a compiled kernel per tuple of argument
    types, built as CuPy's ``_JitRawKernel`` builds it, from the checked tree."""

    def __init__(self, cupy: Any, definition: dict) -> None:
        self.cupy = cupy
        self.checked = _Definition(cupy, definition, 0)
        self.kernels: dict[tuple, Any] = {}
        self._parts = _jit_parts()   # (looked up once: every launch types its arguments)

    def __call__(self, grid: Any, block: Any, args: Any, shared_mem: Any = 0) -> None:
        _jit, core, _compile, typerules, types, _internal = self._parts
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        if not isinstance(args, (list, tuple)):
            raise TypeError("a kernel's arguments are a tuple")
        if not isinstance(shared_mem, (int, np.integer)) or isinstance(shared_mem, bool) \
                or shared_mem < 0:
            raise TypeError("shared_mem is a number of bytes")
        mode = self.checked.mode
        in_types = []
        for x in args:
            if isinstance(x, self.cupy.ndarray):
                in_types.append(types.CArray.from_ndarray(x))
            elif np.isscalar(x) and not isinstance(x, (str, bytes)):
                in_types.append(typerules.get_ctype_from_scalar(mode, x))
            else:
                raise TypeError(f"{type(x)} is not supported for RawKernel")
        in_types = tuple(in_types)
        found = self.kernels.get(in_types)
        if found is None:
            found = self.kernels[in_types] = self._build(in_types, core, _compile, types)
        kernel, cooperative = found
        launched = []
        for a, t in zip(args, in_types):
            if isinstance(t, types.Scalar):
                a = np.float32(a) if t.dtype.char == "e" else t.dtype.type(a)
            launched.append(a)
        kernel(grid, block, tuple(launched), int(shared_mem), None, cooperative)

    def _build(self, in_types: tuple, core: Any, _compile: Any, types: Any) -> tuple:
        checked = self.checked
        generated = _compile.Generated()
        name = checked.tree.name
        generated.device_function[(self, in_types)] = (name, types.void)   # (its name is taken)
        code, _env = _compile._transpile_function(
            checked.tree, name, 'extern "C" __global__', checked.mode, checked.names, in_types,
            types.void, generated, source=checked.source)
        generated.add_code(code)
        if generated.backend != "nvrtc":
            raise NotImplementedError(
                "this kernel needs nvcc (Thrust), which the pool does not run for clients")
        source = '#include "cupy/float16.cuh"\n' + "\n".join(generated.codes)
        module = core.compile_with_cache(source=source, options=generated.options,
                                         backend="nvrtc", jitify=generated.jitify)
        return module.get_function(name), generated.enable_cg
