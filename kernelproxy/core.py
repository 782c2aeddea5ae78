"""``cupy._core`` as code outside CuPy uses it (its tests, libraries built on CuPy): pure
functions of shapes and sizes, answered here without the pool; the session's accelerator
switches (``_accelerator``: whether its CuPy may use CUB or cuTENSOR), sent to the pool; and
``create_reduction_func``, CuPy's factory of ufunc-like reductions, built in the pool from
its plain-string definition like any user kernel."""

from __future__ import annotations

import math
import operator
import types
from collections.abc import Sequence
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import kernels
from .flags import Flags
from .functional import Fusion, fuse
from .ndarray import ndarray
from .state import active_session, namespace

__all__ = ["build_core_modules"]


def get_size(size: Any) -> tuple:
    """A ``size`` argument (None, an int or a sequence of ints) as a shape tuple."""
    if size is None:
        return ()
    if isinstance(size, Sequence):
        return tuple(size)
    try:
        return (operator.index(size),)
    except TypeError:
        raise ValueError("size should be None, collections.abc.Sequence, or int") from None


class ReductionFunction(kernels._RemoteKernel):
    """What ``cupy._core.create_reduction_func`` returns: called as ``f(a, axis=None,
    dtype=None, out=None, keepdims=False)``, compiled and run in the pool."""

    _kind = "simple_reduction"

    def __init__(self, name: str, ops: Any, routine: Any = None, identity: Any = None,
                 preamble: str = "", sort_reduce_axis: bool = True) -> None:
        super().__init__(name=name, ops=ops, routine=routine, identity=identity,
                         preamble=preamble, sort_reduce_axis=sort_reduce_axis)
        self.__name__ = name


def create_reduction_func(name: str, ops: Any, routine: Any = None, identity: Any = None,
                          preamble: str = "", sort_reduce_axis: bool = True) -> ReductionFunction:
    return ReductionFunction(name, ops, routine, identity, preamble, sort_reduce_axis)


def _accelerators(which: str) -> tuple:
    """CuPy's getter and setter of one kind of accelerator, for the active session: read
    from what the session was told at hello and has set since; set in the pool."""
    def chosen() -> list:
        session = active_session()
        table = session.runtime.setdefault("accelerators", {})
        return table.setdefault(which, [])

    def get() -> list:
        return list(chosen())

    def set_(accelerators: Any) -> None:
        codes = []
        for accelerator in accelerators:
            if isinstance(accelerator, int) and not isinstance(accelerator, bool):
                codes.append(accelerator)
            elif accelerator in api.ACCELERATORS:
                codes.append(api.ACCELERATORS[accelerator])
            else:
                raise ValueError(f"Unknown accelerator: {accelerator}")
        active_session().submit(m.KIND_CUDA, api.NONE, None, "core.accelerators", None,
                                [which, codes], label=f"cupy._core.set_{which}_accelerators")
        chosen()[:] = codes

    get.__name__, set_.__name__ = f"get_{which}_accelerators", f"set_{which}_accelerators"
    return get, set_


def elementwise_copy(src: Any, out: Any = None, *, casting: str = "unsafe") -> Any:
    """``cupy._core.elementwise_copy``, CuPy's copying ufunc (``out0 = in0``, unsafe casting
    by default): *src* into *out* (broadcast and cast), or a copy of *src*."""
    cupy = namespace()["cupy"]
    if out is None:
        return cupy.array(src, copy=True, order="C")   # a ufunc's fresh output: C order
    cupy.copyto(out, src, casting=casting)
    return out


def build_core_modules() -> dict[str, types.ModuleType]:
    """``cupy._core``, ``cupy._core.internal``, ``cupy._core.flags`` (the class of
    ``ndarray.flags``), ``cupy._core._accelerator``, ``cupy._core.core`` (where CuPy
    defines ``ndarray``: code outside CuPy names the class as ``cupy._core.core.ndarray``
    and ``cupy._core.ndarray``) and ``cupy._core.fusion`` (``Fusion``, the class of
    ``cupy.fuse``'s functions)."""
    core = types.ModuleType("cupy._core")
    fusion = types.ModuleType("cupy._core.fusion")   # where CuPy's Fusion class lives
    fusion.Fusion, fusion.fuse = Fusion, fuse
    core_core = types.ModuleType("cupy._core.core")
    core_core.ndarray = ndarray
    internal = types.ModuleType("cupy._core.internal")
    internal.prod = lambda shape: math.prod(shape)
    flags = types.ModuleType("cupy._core.flags")
    flags.Flags = Flags
    accelerator = types.ModuleType("cupy._core._accelerator")
    accelerator.__dict__.update({f"ACCELERATOR_{name.upper()}": code
                                 for name, code in api.ACCELERATORS.items()})
    for which in ("elementwise", "reduction", "routine"):
        get, set_ = _accelerators(which)
        accelerator.__dict__.update({get.__name__: get, set_.__name__: set_})
    core.__path__ = []
    core.__dict__.update(get_size=get_size, internal=internal, flags=flags, core=core_core,
                         fusion=fusion, elementwise_copy=elementwise_copy,
                         ndarray=ndarray,
                         _accelerator=accelerator, create_reduction_func=create_reduction_func,
                         ElementwiseKernel=kernels.ElementwiseKernel,
                         ReductionKernel=kernels.ReductionKernel,
                         **{k: v for k, v in accelerator.__dict__.items()
                            if k.startswith(("get_", "set_"))})
    return {"cupy._core": core, "cupy._core.internal": internal, "cupy._core.flags": flags,
            "cupy._core._accelerator": accelerator, "cupy._core.core": core_core,
            "cupy._core.fusion": fusion}
