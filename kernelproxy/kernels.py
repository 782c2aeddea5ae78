"""``cupy.ElementwiseKernel``, ``ReductionKernel``, ``RawKernel`` and ``RawModule`` for a
remote GPU.

A proxy keeps the kernel's definition (source strings and options, plain
data) and sends it with each launch; the session worker compiles it once
(NVRTC, in the user's own process and CUDA context) and caches it. Launches
are asynchronous like any other op.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import ndarray as nd
from .state import active_session
from .stretch_key import FixedDefinition

__all__ = ["ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule"]


def _check_name(name: str) -> None:
    """CuPy's rule for a kernel's name (a C identifier), checked when the kernel is made."""
    if not re.match(r"^[a-zA-Z_][a-zA-Z_0-9]*$", name):
        raise ValueError(f'Invalid kernel name: "{name}"')


class _RemoteKernel:
    _kind = ""
    _want = api.ARRAY

    def __init__(self, **definition: Any) -> None:
        self._definition = FixedDefinition({k: (tuple(v) if isinstance(v, list) else v)
                                            for k, v in definition.items() if v is not None})
        self.name = definition.get("name", "kernel")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        session = active_session()
        return nd.call(session, m.KIND_KERNEL, self._kind, self._want, self._definition, args,
                       kwargs, f"{type(self).__name__} {self.name}")

    def __repr__(self) -> str:
        return f"<remote {type(self).__name__} {self.name!r}>"


class ElementwiseKernel(_RemoteKernel):
    _kind = "elementwise"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Outputs given by position (after the inputs) are filled and returned, as in CuPy."""
        if len(args) > self._inputs:
            super_call = super().__call__
            kernel_want, self._want = self._want, api.NONE
            try:
                super_call(*args, **kwargs)
            finally:
                self._want = kernel_want
            outs = args[self._inputs:]
            return outs[0] if len(outs) == 1 and not self._definition.get("return_tuple") else tuple(outs)
        return super().__call__(*args, **kwargs)

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, loop_prep: str = "", after_loop: str = "",
                 options: tuple = ()) -> None:
        super().__init__(in_params=in_params, out_params=out_params, operation=operation,
                         name=name, reduce_dims=reduce_dims, preamble=preamble,
                         no_return=no_return, return_tuple=return_tuple, loop_prep=loop_prep,
                         after_loop=after_loop, options=options)
        _check_name(name)
        self._inputs = len([p for p in in_params.split(",") if p.strip()])
        if no_return:
            self._want = api.NONE
        elif return_tuple or "," in out_params:
            self._want = api.MULTI


class ReductionKernel(_RemoteKernel):
    _kind = "reduction"

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str,
                 post_map_expr: str, identity: str | None, name: str = "reduce_kernel",
                 reduce_type: str | None = None, reduce_dims: bool = True, preamble: str = "",
                 options: tuple = ()) -> None:
        super().__init__(in_params=in_params, out_params=out_params, map_expr=map_expr,
                         reduce_expr=reduce_expr, post_map_expr=post_map_expr, identity=identity,
                         name=name, reduce_type=reduce_type, reduce_dims=reduce_dims,
                         preamble=preamble, options=options)
        _check_name(name)


class RawKernel(_RemoteKernel):
    """``kernel(grid, block, args, shared_mem=0)`` writes into the arrays it is given."""

    _kind = "raw"
    _want = api.NONE

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 jitify: bool | None = None) -> None:
        super().__init__(code=code, name=name, options=options, backend=backend,
                         translate_cucomplex=translate_cucomplex,
                         enable_cooperative_groups=enable_cooperative_groups, jitify=jitify)


class RawModule:
    """``cupy.RawModule``: CUDA C++ source holding several kernels (templates named by
    ``name_expressions``), compiled once by the session's worker (NVRTC, as ``RawKernel``);
    ``get_function(name)`` gives a kernel launched as ``kernel(grid, block, args,
    shared_mem=0)``. The source is plain data: the pool compiles device code only.

    ``path=`` (a cubin or PTX file of this machine) and the module's globals and texture
    references (``get_global``, ``get_texref``) are not forwarded: they raise saying so.
    """

    def __init__(self, *, code: str | None = None, path: str | None = None, options: tuple = (),
                 backend: str = "nvrtc", translate_cucomplex: bool = False,
                 enable_cooperative_groups: bool = False, name_expressions: Any = None,
                 jitify: bool | None = None) -> None:
        if path is not None:
            raise NotImplementedError(
                "cupy.RawModule(path=...) is not forwarded to gpu-workbench's remote GPU: "
                "a module file of this machine is not loaded in the pool; pass its source as code=")
        if code is None:
            raise TypeError("One of code and path must be specified")
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        if name_expressions is not None:
            name_expressions = tuple(name_expressions)
            if not all(isinstance(n, str) for n in name_expressions):
                raise TypeError("name_expressions must be a sequence of str")
        self.code, self.options, self.backend = code, tuple(options), backend
        self.name_expressions = name_expressions
        self.translate_cucomplex = translate_cucomplex
        self.enable_cooperative_groups = enable_cooperative_groups
        self.jitify = jitify
        self._functions: dict[str, RawKernel] = {}

    def get_function(self, name: str) -> "RawKernel":
        """The kernel *name* of the module (a name expression for a template)."""
        if not isinstance(name, str):
            raise TypeError("a function's name is a str")
        kernel = self._functions.get(name)
        if kernel is None:
            kernel = object.__new__(_ModuleFunction)
            _RemoteKernel.__init__(
                kernel, code=self.code, function=name, options=self.options, backend=self.backend,
                translate_cucomplex=self.translate_cucomplex,
                enable_cooperative_groups=self.enable_cooperative_groups,
                name_expressions=self.name_expressions, jitify=self.jitify)
            kernel.name = name
            self._functions[name] = kernel
        return kernel

    def compile(self, log_stream: Any = None) -> None:
        """Compiled in the pool at the first launch of one of its functions."""

    def get_global(self, name: str) -> Any:
        raise NotImplementedError("RawModule.get_global is not forwarded to gpu-workbench's "
                                  "remote GPU (a pointer to a __device__ variable in the pool)")

    def get_texref(self, name: str) -> Any:
        raise NotImplementedError("RawModule.get_texref is not forwarded to gpu-workbench's "
                                  "remote GPU")

    def __repr__(self) -> str:
        return f"<remote RawModule, {len(self.code)} characters of source>"


class _ModuleFunction(RawKernel):
    """A kernel of a :class:`RawModule`: launched as a ``RawKernel`` is."""

    _kind = "module"
