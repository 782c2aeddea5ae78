"""The ``cupy`` look-alike modules, built from the shared allow-list.

Allow-listed functions become proxies that issue ops on the active session;
dtype objects, exception classes and pure dtype arithmetic (``result_type``,
``finfo``, ...) are NumPy's own, exactly as in CuPy, and run locally.
"""

from __future__ import annotations

import importlib.util
import types
from typing import Any, Callable

import numpy as np
import numpy.exceptions
import numpy.linalg

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import BadCoefficients, PerformanceWarning, sparse_warning

from . import (cuda, fft_plans, flatiter, functional, host_io, index_tricks, jit, kernels, poly1d,
               signal_objects, sparse_lu, sparse_objects, ufuncs)
from .core import build_core_modules
from .uploads import move_array, upload, upload_array
from .random import build_random_modules
from .state import activate, active_session, primary_session, proxy_cupy, register_namespace
from .fft_config import FFTConfigModule, build_callback_module
from .functions import forwarded, function_proxy
from . import ndarray as nd
from .fuse_trace import Tracer

__all__ = ["build_modules", "module_for", "upload_array", "forwarded",
           # the active session's state, which lives in kernelproxy.state
           "active_session", "activate", "primary_session", "proxy_cupy"]


_DTYPE_NAMES = """
    bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64
    complex64 complex128 intp uintp byte short intc int_ longlong ubyte ushort uintc uint
    ulonglong half single double longdouble csingle cdouble clongdouble number integer
    signedinteger unsignedinteger floating complexfloating inexact generic bool
""".split()
_HOST_FUNCTIONS = """
    dtype iinfo finfo result_type can_cast promote_types min_scalar_type issubdtype
    common_type isdtype typename mintypecode broadcast_shapes format_float_positional
    format_float_scientific
""".split()
_CONSTANTS = "pi e inf nan newaxis euler_gamma".split()


# ---------------------------------------------------------------- host-side helpers

def _moved(a: Any, session: Any) -> Any:
    """An array of another of the client's devices copied to *session*'s, as CuPy's
    ``array``/``asarray`` copy it to the current device; anything else as it is."""
    owner = getattr(a, "_s", None) if isinstance(a, nd.ndarray) else None
    if owner is None or owner is session or session.group is None or owner not in session.group:
        return a
    return move_array(a, session, "K")


def _host_number(obj: Any) -> Any:
    """A NumPy number (``np.float32(lr)``) as its 0-d host array, which an upload sends as
    data: as a literal it was a new key for each value, so a loop that uploads one each step
    held a stretch a value and never replayed one step's again (docs/stretch-replay.md, "An
    upload inside a held stretch"). Anything else as it is."""
    if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
        return np.asarray(obj)
    return obj


def asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> Any:
    """``cupy.asarray``: host NumPy data is uploaded as one zero-copy frame."""
    session = active_session()
    if session.group is not None:
        a = _moved(a, session)
    a = _host_number(a)
    if isinstance(a, nd.ndarray) and dtype is None and order in (None, "K", "A"):
        return a
    if isinstance(a, np.ndarray):
        a, _ = upload(session, a)
        if dtype is None and order in (None, "K", "A"):
            return a
    kwargs = {k: v for k, v in (("dtype", dtype), ("order", order)) if v is not None}
    return nd.call(session, m.KIND_FUNCTION, "asarray", api.ARRAY, None, (a,), kwargs, "cupy.asarray")


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, *, blocking: bool = False) -> Any:
    """``cupy.array``: like :func:`asarray`, always a new array unless ``copy=False``."""
    session = active_session()
    if session.group is not None:
        moved = _moved(obj, session)
        if moved is not obj:
            obj, copy = moved, None   # (already a new array here: copy only to convert)
    obj = _host_number(obj)
    if isinstance(obj, nd.ndarray) and copy is not True and ndmin <= obj.ndim and obj._fits(dtype, order):
        return obj   # no copy needed: CuPy returns the array itself
    if isinstance(obj, np.ndarray):
        obj, c_order = upload(session, obj)
        if dtype is None and ndmin == 0 and (order in ("K", "A") or order == ("C" if c_order else "F")):
            return obj  # already a new array, in the layout CuPy gives
        copy = True  # (copy=False must not fail: a host array is always copied)
    kwargs: dict[str, Any] = {"copy": copy, "order": order, "ndmin": ndmin}
    if dtype is not None:
        kwargs["dtype"] = dtype
    return nd.call(session, m.KIND_FUNCTION, "array", api.ARRAY, None, (obj,), kwargs, "cupy.array")


def _as_layout(name: str, order: str):
    """``cupy.ascontiguousarray`` / ``asfortranarray``: an array already in the layout and
    dtype is returned itself, as in CuPy; anything else is converted by the pool."""
    def convert(a: Any, dtype: Any = None) -> Any:
        if isinstance(a, nd.ndarray) and a.ndim and a._fits(dtype, order):
            return a
        return nd.call(active_session(), m.KIND_FUNCTION, name, api.ARRAY, None, (a,),
                       {} if dtype is None else {"dtype": dtype}, f"cupy.{name}")

    convert.__name__ = convert.__qualname__ = name
    return convert


ascontiguousarray = _as_layout("ascontiguousarray", "C")
asfortranarray = _as_layout("asfortranarray", "F")


def linspace(*args: Any, **kwargs: Any) -> Any:
    """``cupy.linspace``: an array, or ``(array, step)`` with ``retstep=True``."""
    retstep = kwargs.get("retstep", args[4] if len(args) > 4 else False)
    return nd.call(active_session(), m.KIND_FUNCTION, "linspace", api.MULTI if retstep else api.ARRAY,
                   None, args, kwargs, "cupy.linspace")


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *, blocking: bool = True):
    """``cupy.asnumpy``: remote arrays are downloaded, anything else converted locally."""
    if isinstance(a, nd.ndarray):
        return a.get(order=order, out=out)
    if hasattr(a, "__cuda_array_interface__"):   # memory of the session's, named by address
        return asarray(a).get(order=order, out=out)
    result = np.asarray(a, order=order)
    if out is not None:
        out[...] = result
        return out
    return result


def get_array_module(*args: Any) -> Any:
    """``cupy.get_array_module``: the proxy ``cupy`` if any argument is a remote array (or
    a ``cupy.fuse`` stand-in, as CuPy's fusion answers for its own)."""
    if any(isinstance(arg, (nd.ndarray, Tracer)) for arg in args):
        return build_modules()["cupy"]
    return np


def _meta_dtype(x: Any) -> Any:
    return x.dtype if isinstance(x, nd.ndarray) else x


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[_meta_dtype(x) for x in arrays_and_dtypes])


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    return np.can_cast(_meta_dtype(from_), to, casting)


def make_aligned_dtype(dtype: Any, *, alignment: int = -1, recurse: bool = True) -> np.dtype:
    """CuPy's GPU layout of a structured dtype, computed by the pool's CuPy; the dtype is
    made here first (NumPy parses ``"?,c8"`` on the client, never in the pool)."""
    return forwarded("make_aligned_dtype")(np.dtype(dtype), alignment=alignment, recurse=recurse)


def common_type(*arrays: Any) -> type:
    """NumPy's rule on the arrays' dtypes (known here), over empty host stand-ins."""
    return np.common_type(*[np.empty(0, _meta_dtype(a)) for a in arrays])


def isscalar(element: Any) -> bool:
    return np.isscalar(element)


def ndim(a: Any) -> int:
    return a.ndim if isinstance(a, nd.ndarray) else np.ndim(a)


def shape(a: Any) -> tuple:
    return a.shape if isinstance(a, nd.ndarray) else np.shape(a)


def size(a: Any, axis: int | None = None) -> int:
    if isinstance(a, nd.ndarray):
        return a.size if axis is None else a.shape[axis]
    return np.size(a, axis)


def iscomplexobj(x: Any) -> bool:
    return _meta_dtype(x).kind == "c" if isinstance(x, nd.ndarray) else np.iscomplexobj(x)


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


# ---------------------------------------------------------------- modules


#: names that are another name's object in CuPy (``cupyx.scipy.special.psi is digamma``)
_ALIASES = {"cupyx.scipy.special.psi": "digamma"}
#: names made when first read (what they need is costly to import and seldom used)
_LAZY: dict[str, Callable[[], Any]] = {
    f"cupyx.scipy.sparse.{name}": (lambda name=name: sparse_warning(name))
    for name in ("SparseWarning", "SparseEfficiencyWarning")}


class ProxyModule(types.ModuleType):
    """A module whose allow-listed names resolve to op-issuing proxies."""

    def __init__(self, name: str, prefix: str) -> None:
        super().__init__(name)
        self.__dict__["_prefix"] = prefix

    def __getattr__(self, name: str) -> Any:
        qualname = self.__dict__["_prefix"] + name
        make = _LAZY.get(qualname)
        if make is not None:
            value = self.__dict__[name] = make()
            return value
        alias = _ALIASES.get(qualname)
        if alias is not None:   # one object under two names, as in CuPy
            proxy = self.__dict__[name] = getattr(self, alias)
            return proxy
        want = api.FUNCTIONS.get(qualname)
        if want is None or name.startswith("__"):   # (a few private helpers are allow-listed)
            raise AttributeError(
                f"module {self.__name__!r} has no attribute {name!r} "
                "(not available on gpu-workbench's remote GPU)"
            )
        proxy = ufuncs.make_ufunc(qualname) or function_proxy(qualname, want)
        self.__dict__[name] = proxy
        return proxy

    def __dir__(self) -> list[str]:
        prefix = self.__dict__["_prefix"]
        names = {q[len(prefix):] for q in api.FUNCTIONS if q.startswith(prefix) and "." not in q[len(prefix):]}
        return sorted(names | set(self.__dict__))


def _scipy_fft_backend(module: types.ModuleType) -> None:
    """``scipy.fft.set_backend(cupyx.scipy.fft)``: SciPy's uarray protocol, answered with the
    module's own (remote) functions, as CuPy's module does."""
    def __ua_function__(method: Any, args: tuple, kwargs: dict) -> Any:
        name = getattr(method, "__name__", "")
        if f"cupyx.scipy.fft.{name}" not in api.FUNCTIONS:
            return NotImplemented
        return getattr(module, name)(*args, **kwargs)

    module.__dict__.update(__ua_domain__="numpy.scipy.fft", __ua_function__=__ua_function__)


class _UtilModule(types.ModuleType):
    """``cupy._util``: CuPy's warning class, and the settings of the pool's CuPy that code
    may read (``ENABLE_SLICE_COPY``: whether the pool copies between slices of different
    layouts in one kernel; it came with the session's hello)."""

    def __getattr__(self, name: str) -> Any:
        if name == "ENABLE_SLICE_COPY":
            return bool(active_session().runtime.get("slice_copy", False))
        raise AttributeError(f"module 'cupy._util' has no attribute {name!r} "
                             "(not forwarded to gpu-workbench's remote GPU)")


_modules_cache: dict[str, types.ModuleType] = {}


def build_modules() -> dict[str, types.ModuleType]:
    """The proxy modules by import name (built once; they follow the active session)."""
    if _modules_cache:
        return _modules_cache
    cupy = ProxyModule("cupy", "")
    cupy.__dict__.update(
        __version__="remote", __path__=[], __package__="cupy", ndarray=nd.ndarray,
        asarray=asarray, array=array, ascontiguousarray=ascontiguousarray,
        asfortranarray=asfortranarray, linspace=linspace, asnumpy=asnumpy,
        get_array_module=get_array_module,
        result_type=result_type, can_cast=can_cast, common_type=common_type,
        make_aligned_dtype=make_aligned_dtype, isscalar=isscalar, ndim=ndim, shape=shape,
        size=size, iscomplexobj=iscomplexobj, isrealobj=isrealobj,
        ElementwiseKernel=kernels.ElementwiseKernel, ReductionKernel=kernels.ReductionKernel,
        RawKernel=kernels.RawKernel, RawModule=kernels.RawModule, ufunc=ufuncs.ufunc, flatiter=flatiter.flatiter,
        fuse=functional.fuse, vectorize=functional.vectorize, piecewise=functional.piecewise,
        **poly1d.POLY_ROUTINES,
        r_=index_tricks.r_, c_=index_tricks.c_, mask_indices=index_tricks.mask_indices,
        **host_io.HOST_FUNCTIONS,
        **host_io.HOST_OBJECTS,
    )
    for name in _DTYPE_NAMES + _HOST_FUNCTIONS + _CONSTANTS:
        if name not in cupy.__dict__ and hasattr(np, name):
            cupy.__dict__[name] = getattr(np, name)

    linalg = ProxyModule("cupy.linalg", "linalg.")
    linalg.__dict__.update(LinAlgError=numpy.linalg.LinAlgError, __package__="cupy.linalg", __path__=[])
    fft = ProxyModule("cupy.fft", "fft.")
    fft_config = FFTConfigModule()
    fft_callback = build_callback_module()
    fft.__dict__.update(__path__=[], __package__="cupy.fft", config=fft_config,
                        _callback=fft_callback)
    polynomial = types.ModuleType("cupy.polynomial")   # a package of two forwarded modules
    polynomial.__dict__.update(__path__=[], __package__="cupy.polynomial")
    polynomial_modules = {"cupy.polynomial": polynomial}
    for sub in api.POLYNOMIAL_SUBMODULES:
        module = ProxyModule(f"cupy.polynomial.{sub}", f"polynomial.{sub}.")
        module.__dict__["__package__"] = "cupy.polynomial"
        polynomial.__dict__[sub] = polynomial_modules[module.__name__] = module
    random_modules = build_random_modules(ProxyModule("cupy.random", "random."))
    random = random_modules["cupy.random"]
    cupyx = ProxyModule("cupyx", "cupyx.")
    cupyx.__dict__.update(__path__=[], __package__="cupyx")
    jit_module = jit.build_jit_module()   # @jit.rawkernel(): translated in the pool
    cupyx.__dict__["jit"] = jit_module

    # cupyx.scipy: its submodules come as the pool forwards them; sparse matrices are not
    # forwarded yet, so nothing here is one (issparse and the like answer as CuPy would)
    scipy = ProxyModule("cupyx.scipy", "cupyx.scipy.")
    scipy.__dict__.update(__path__=[], __package__="cupyx.scipy",
                          _scipy_available=importlib.util.find_spec("scipy") is not None)
    sparse = ProxyModule("cupyx.scipy.sparse", "cupyx.scipy.sparse.")
    # sparse matrices: objects of the worker (sparse_objects)
    sparse.__dict__.update(__package__="cupyx.scipy.sparse", **sparse_objects.SPARSE_NAMES)
    scipy.__dict__["sparse"] = sparse
    cupyx.__dict__["scipy"] = scipy
    scipy_modules = {"cupyx.scipy.sparse": sparse}
    for sub in api.SCIPY_SUBMODULES:   # special, ndimage, signal, signal.windows, fft, linalg
        name = f"cupyx.scipy.{sub}"
        module = ProxyModule(name, name + ".")
        module.__dict__.update(__package__=name, __path__=[])
        parent_name, _, leaf = name.rpartition(".")
        (scipy if parent_name == "cupyx.scipy" else scipy_modules[parent_name]).__dict__[leaf] = module
        scipy_modules[name] = module
    _scipy_fft_backend(scipy_modules["cupyx.scipy.fft"])
    # LU factorizations: objects of the worker (sparse_lu)
    scipy_modules["cupyx.scipy.sparse.linalg"].__dict__.update(sparse_lu.SPARSE_LU_NAMES)
    # systems and chirp z-transforms: objects of the worker; filter design's warning
    scipy_modules["cupyx.scipy.signal"].__dict__.update(signal_objects.SIGNAL_OBJECTS,
                                                        BadCoefficients=BadCoefficients)
    for name in ("cupyx.scipy.fft", "cupyx.scipy.fftpack"):   # plans made in the pool
        scipy_modules[name].__dict__["get_fft_plan"] = fft_plans.get_fft_plan
    # cupyx.cusolver: the pool's linalg calls cuSOLVER itself; none of its routines is the
    # client's to call, so every one is unavailable here (tests and code then take the
    # ordinary cupy.linalg path)
    cusolver = types.ModuleType("cupyx.cusolver")
    cusolver.check_availability = lambda name: False
    cupyx.__dict__["cusolver"] = cusolver

    cuda_modules = cuda.build_cuda_modules()
    cuda_modules["cupy.cuda"].__dict__["curand"] = random_modules["cupy.cuda.curand"]
    cufft = cuda_modules["cupy.cuda.cufft"] = fft_plans.build_cufft_module(cuda.ForwardingModule)
    cuda_modules["cupy.cuda"].__dict__["cufft"] = cufft
    cupy.__dict__.update(get_default_memory_pool=cuda.get_default_memory_pool,
                         get_default_pinned_memory_pool=cuda.get_default_pinned_memory_pool)

    core_modules = build_core_modules()
    core_modules["cupy._core"].array = cupy.array   # cupy._core.array(obj, dtype, ...)
    util = _UtilModule("cupy._util")   # CuPy's warning class and settings live here
    util.PerformanceWarning = PerformanceWarning

    for sub_name, sub in (("linalg", linalg), ("fft", fft), ("random", random),
                          ("polynomial", polynomial),
                          ("cuda", cuda_modules["cupy.cuda"]),
                          ("exceptions", numpy.exceptions), ("_util", util),
                          ("_core", core_modules["cupy._core"])):
        cupy.__dict__[sub_name] = sub
    _modules_cache.update({
        "cupy": cupy, "cupy.linalg": linalg, "cupy.fft": fft, "cupy.fft.config": fft_config,
        "cupy.fft._callback": fft_callback,
        **random_modules, **polynomial_modules,
        "cupy.exceptions": numpy.exceptions, "cupy._util": util, **cuda_modules,
        "cupyx": cupyx, "cupyx.scipy": scipy, **scipy_modules,
        "cupyx.cusolver": cusolver, "cupyx.jit": jit_module, **core_modules,
    })
    return _modules_cache


register_namespace(build_modules)


def module_for(session: Any) -> types.ModuleType:
    """The proxy ``cupy`` module, its ops issued on *session* (made the active one)."""
    activate(session)
    return build_modules()["cupy"]
