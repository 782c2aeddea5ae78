"""``cupy.ElementwiseKernel``, ``ReductionKernel`` and ``RawKernel`` for a remote GPU.

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

__all__ = ["ElementwiseKernel", "ReductionKernel", "RawKernel"]


def _check_name(name: str) -> None:
    """CuPy's rule for a kernel's name (a C identifier), checked when the kernel is made."""
    if not re.match(r"^[a-zA-Z_][a-zA-Z_0-9]*$", name):
        raise ValueError(f'Invalid kernel name: "{name}"')


class _RemoteKernel:
    _kind = ""
    _want = api.ARRAY

    def __init__(self, **definition: Any) -> None:
        self._definition = {k: (tuple(v) if isinstance(v, list) else v)
                            for k, v in definition.items() if v is not None}
        self.name = definition.get("name", "kernel")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .modules import active_session
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
                 jitify: bool = False) -> None:
        super().__init__(code=code, name=name, options=options, backend=backend,
                         translate_cucomplex=translate_cucomplex,
                         enable_cooperative_groups=enable_cooperative_groups, jitify=jitify)
