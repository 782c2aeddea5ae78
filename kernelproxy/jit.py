"""``cupyx.jit`` for a remote GPU: ``@jit.rawkernel()`` kernels written in Python.

CuPy's JIT never runs a kernel's Python: at the first launch with given argument types it
reads the function's source and translates it to CUDA C++. Here the function's source
*text* and what its free names stand for (numbers, NumPy scalar types, the modules math,
numpy, cupy and ``cupyx.jit``, cupyx.jit's names, and device functions, whose own text
comes along) are sent with each launch; the pool checks the text against a closed set of
constructs and names and has CuPy's JIT translate and compile it there
(gpu_backend/devices/jit_rawkernel.py). Launches are asynchronous like any op.

``threadIdx``, ``grid``, ``syncthreads`` and the rest of ``cupyx.jit``'s names are only
meaningful inside a kernel's text: here they are markers that the client's free-name
search recognises. ``cupyx.jit.cg``, ``cub`` and ``thrust`` are not forwarded (Thrust
needs nvcc, which the pool does not run for clients).
"""

from __future__ import annotations

import functools
import types
import warnings
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import ndarray as nd
from .function_source import free_names, function_source
from .state import active_session, proxy_cupy

__all__ = ["rawkernel", "JitRawKernel", "build_jit_module", "jit_free_name"]

class _JitName:
    """One of cupyx.jit's names on the client: it stands for device code in a kernel."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __gpuwb_free_name__(self) -> dict:
        return {"jit": self.name}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Cannot call this function from Python layer.")

    def __repr__(self) -> str:
        return "<cupyx.jit function>"


_FINDING: dict = {}   # a definition being found (see JitRawKernel.definition)


class JitRawKernel:
    """A ``@jit.rawkernel()`` kernel: ``kernel(grid, block, args, shared_mem=0)`` or
    ``kernel[grid, block](*args)``; the pool translates it for each tuple of argument
    types it is launched with, as CuPy does."""

    def __init__(self, func: Any, mode: str, device: bool) -> None:
        self._func = func
        self._mode = mode
        self._device = device
        self._definition: dict | None = None

    def __gpuwb_free_name__(self) -> dict:
        """A device function as another kernel names it: its definition (a kernel cannot be
        called from one: its name, refused by the pool)."""
        if self._device:
            return {"device": self.definition()}
        return {"kernel": getattr(self._func, "__name__", "kernel")}

    def definition(self) -> dict:
        """The kernel as the pool receives it (found once: the source does not change)."""
        if self._definition is _FINDING:   # a device function that calls itself
            raise ValueError("Recursive function is not supported.")
        if self._definition is None:
            self._definition = _FINDING
            try:
                form, source = function_source(self._func)
                self._definition = {"name": getattr(self._func, "__name__", "kernel"),
                                    "form": form, "source": source, "mode": self._mode,
                                    "names": free_names(self._func, proxy_cupy())}
            finally:
                if self._definition is _FINDING:
                    self._definition = None
        return self._definition

    def __call__(self, grid: Any, block: Any, args: Any, shared_mem: int = 0,
                 stream: Any = None) -> None:
        for x in args:
            if not (isinstance(x, nd.ndarray) or np.isscalar(x)):
                raise TypeError(f"{type(x)} is not supported for RawKernel")
        definition = self.definition()
        # (a stream: every op of a session runs in issue order on the pool's side)
        nd.call(active_session(), m.KIND_KERNEL, "jit", api.NONE, definition,
                (grid, block, tuple(args)), {"shared_mem": shared_mem} if shared_mem else {},
                f"cupyx.jit kernel {definition['name']}")

    def __getitem__(self, grid_and_block: Any) -> Any:
        grid, block = grid_and_block
        if not isinstance(grid, tuple):
            grid = (grid, 1, 1)
        if not isinstance(block, tuple):
            block = (block, 1, 1)
        return lambda *args, **kwargs: self(grid, block, args, **kwargs)

    @property
    def cached_codes(self) -> Any:
        raise NotImplementedError("cupyx.jit's cached_codes is not forwarded to gpu-workbench's "
                                  "remote GPU: the kernels are translated in the pool")

    @property
    def cached_code(self) -> Any:
        raise NotImplementedError("cupyx.jit's cached_code is not forwarded to gpu-workbench's "
                                  "remote GPU: the kernels are translated in the pool")

    def get_lto_ir(self, args: Any) -> Any:
        raise NotImplementedError("cupyx.jit's get_lto_ir is not forwarded to gpu-workbench's "
                                  "remote GPU")

    def __repr__(self) -> str:
        return f"<remote cupyx.jit kernel {getattr(self._func, '__name__', '?')!r}>"


def rawkernel(*, mode: str = "cuda", device: bool = False) -> Any:
    """``cupyx.jit.rawkernel``: a decorator making a :class:`JitRawKernel` (experimental in
    CuPy, which warns so; ``cupy.disable_experimental_warning`` silences it)."""
    if not getattr(proxy_cupy(), "disable_experimental_warning", False):
        warnings.warn("cupyx.jit.rawkernel is experimental. The interface can change in the "
                      "future.", FutureWarning, stacklevel=2)

    def wrapper(func: Any) -> JitRawKernel:
        return functools.update_wrapper(JitRawKernel(func, mode, device), func)
    return wrapper


class _JitModule(types.ModuleType):
    def __gpuwb_free_name__(self) -> dict:
        return {"module": "jit"}

    def __getattr__(self, name: str) -> Any:
        if name in ("cg", "cub", "thrust"):
            raise AttributeError(f"cupyx.jit.{name} is not forwarded to gpu-workbench's remote "
                                 "GPU yet")
        raise AttributeError(f"module 'cupyx.jit' has no attribute {name!r}")


def build_jit_module() -> types.ModuleType:
    """The ``cupyx.jit`` module of the proxy."""
    jit = _JitModule("cupyx.jit")
    jit.__dict__.update({name: _JitName(name) for name in api.JIT_NAMES},
                        rawkernel=rawkernel, __package__="cupyx")
    return jit


def jit_free_name(value: Any) -> Any:
    """What a kernel's free name stands for on the wire, for cupyx.jit's own objects (None
    for anything else): the module, one of its names, a device function (its definition) or
    a kernel (which a kernel may not call). kernelproxy.function_source asks each value for
    it through its type's ``__gpuwb_free_name__`` (so it need not import this module)."""
    wire = getattr(type(value), "__gpuwb_free_name__", None)
    return wire(value) if wire is not None else None