"""The ``cupy`` look-alike modules, built from the shared allow-list.

Allow-listed functions become proxies that issue ops on the active session;
dtype objects, exception classes and pure dtype arithmetic (``result_type``,
``finfo``, ...) are NumPy's own, exactly as in CuPy, and run locally.
"""

from __future__ import annotations

import functools
import importlib.util
import types
from typing import Any, Callable, NamedTuple

import numpy as np
import numpy.exceptions
import numpy.linalg

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import BadCoefficients, PerformanceWarning, SessionLostError, sparse_warning

from . import (cuda, fft_plans, flatiter, functional, host_io, index_tricks, jit, kernels, poly1d,
               signal_objects, sparse_lu, sparse_objects, ufuncs)
from .core import build_core_modules
from .device_group import current_of, like_on_current, move_array
from .fft_config import FFTConfigModule, build_callback_module
from . import ndarray as nd

__all__ = ["build_modules", "active_session", "activate", "primary_session", "upload_array"]

_active: list[Any] = []

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


def activate(session: Any) -> None:
    """Make *session* the one the proxy modules issue ops on."""
    _active[:] = [session]


def primary_session() -> Any:
    """The active client's session of device 0 (its only one, unless it holds several)."""
    if not _active or _active[0].closed:
        raise SessionLostError("no remote GPU session is active; call kernelproxy.install(session)")
    return _active[0]


def active_session() -> Any:
    """The session of this thread's current device (``cupy.cuda.Device``)."""
    session = primary_session()
    return session if session.group is None else current_of(session)


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


class Bunch(types.SimpleNamespace):
    """``place_poles``' result: its fields as attributes, as CuPy's (and SciPy's) ``Bunch``
    gives them (the wire carries a map of them)."""


#: Functions whose result CuPy gives as a named tuple or an object of fields (the wire
#: carries a plain tuple or map): the class and whether it takes the fields by name.
_NAMED_RESULTS = {"unique_all": UniqueAllResult, "unique_counts": UniqueCountsResult,
                  "unique_inverse": UniqueInverseResult,
                  "cupyx.scipy.signal.place_poles": lambda fields: Bunch(**fields)}


#: CuPy's reductions that are their argument's own method (``cupy.sum(a)`` is
#: ``a.sum(axis, dtype, out, keepdims)``): given a NumPy array, CuPy returns NumPy's answer,
#: computed on the host, and so does the proxy. Each: the method and CuPy's parameters.
_BY_METHOD = {
    "sum": ("sum", ("axis", "dtype", "out", "keepdims")),
    "prod": ("prod", ("axis", "dtype", "out", "keepdims")),
    "amax": ("max", ("axis", "out", "keepdims")), "max": ("max", ("axis", "out", "keepdims")),
    "amin": ("min", ("axis", "out", "keepdims")), "min": ("min", ("axis", "out", "keepdims")),
    "mean": ("mean", ("axis", "dtype", "out", "keepdims")),
    "var": ("var", ("axis", "dtype", "out", "ddof", "keepdims")),
    "std": ("std", ("axis", "dtype", "out", "ddof", "keepdims")),
}


def _host_method(qualname: str, a: np.ndarray, args: tuple, kwargs: dict) -> Any:
    method, params = _BY_METHOD[qualname]
    if len(args) > len(params):
        raise TypeError(f"{qualname}() takes at most {len(params) + 1} arguments")
    return getattr(a, method)(**dict(zip(params, args)), **kwargs)


#: ``cupyx.scipy.ndimage`` functions that write into an ``output`` array when given one and
#: return that very array (the position of ``output`` among their parameters, CuPy 14).
_NDIMAGE_OUTPUT = {f"cupyx.scipy.ndimage.{name}": int(index) for name, index in (
    item.split(":") for item in """
    affine_transform:4 binary_closing:3 binary_dilation:4 binary_erosion:4 binary_fill_holes:2
    binary_hit_or_miss:3 binary_opening:3 binary_propagation:3 black_tophat:4 convolve:2
    convolve1d:3 correlate:2 correlate1d:3 fourier_ellipsoid:4 fourier_gaussian:4 fourier_shift:4
    fourier_uniform:4 gaussian_filter:3 gaussian_filter1d:4 gaussian_gradient_magnitude:2
    gaussian_laplace:2 generic_gradient_magnitude:2 generic_laplace:2 grey_closing:4
    grey_dilation:4 grey_erosion:4 grey_opening:4 laplace:1 map_coordinates:2 maximum_filter:3
    maximum_filter1d:3 median_filter:3 minimum_filter:3 minimum_filter1d:3
    morphological_gradient:4 morphological_laplace:4 percentile_filter:4 prewitt:2 rank_filter:4
    rotate:4 shift:2 sobel:2 spline_filter:2 spline_filter1d:3 uniform_filter:2
    uniform_filter1d:3 white_tophat:4 zoom:2""".split())}


def _output_array(index: int, args: tuple, kwargs: dict) -> Any:
    """The remote ``output`` array an ndimage call writes into, if it was given one."""
    output = kwargs.get("output", args[index] if len(args) > index else None)
    return output if isinstance(output, nd.ndarray) else None


#: Functions that return one array unless a flag asks for more (a tuple): the flag's name
#: and position. Only then is the result structured (which costs a round trip).
_TUPLE_WHEN = {"intersect1d": ("return_indices", 3), "average": ("returned", 3)}


#: CuPy's complex-to-complex n-d transforms given no axes return their input itself
_INPUT_WHEN_NO_AXES = frozenset({"fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn"})


def _no_axes(args: tuple, kwargs: dict) -> bool:
    """Whether an n-d transform's call names no axis (``axes=()``) and no shape."""
    axes = kwargs["axes"] if "axes" in kwargs else (args[2] if len(args) > 2 else None)
    s = kwargs["s"] if "s" in kwargs else (args[1] if len(args) > 1 else None)
    return axes is not None and len(axes) == 0 and (s is None or len(s) == 0)


def _function(qualname: str, want: str):
    label = f"cupy.{qualname}"
    named = _NAMED_RESULTS.get(qualname)
    by_method = qualname in _BY_METHOD
    output_index = _NDIMAGE_OUTPUT.get(qualname)
    tuple_when = _TUPLE_WHEN.get(qualname)
    input_when_no_axes = qualname in _INPUT_WHEN_NO_AXES

    def proxy(*args: Any, **kwargs: Any) -> Any:
        if by_method and args and isinstance(args[0], np.ndarray):
            return _host_method(qualname, args[0], args[1:], kwargs)
        if input_when_no_axes and args and isinstance(args[0], nd.ndarray) and _no_axes(args, kwargs):
            return args[0]
        wanted = want
        if tuple_when is not None:
            flag, index = tuple_when
            if kwargs.get(flag, args[index] if len(args) > index else False):
                wanted = api.MULTI
        session = active_session()
        if session.group is not None:   # a prototype on another device: made here from its metadata
            like = like_on_current(qualname, args, kwargs, session)
            if like is not None:
                return nd.call(session, m.KIND_FUNCTION, like[0], api.ARRAY, None, like[1], like[2],
                               label)
        result = nd.call(session, m.KIND_FUNCTION, qualname, wanted, None, args, kwargs, label)
        if output_index is not None:   # the array written into is the result itself, as in CuPy
            output = _output_array(output_index, args, kwargs)
            if output is not None:
                return output
        if named is None:
            return result
        return named(result) if isinstance(result, dict) else named(*result)

    proxy.__name__ = proxy.__qualname__ = qualname.rpartition(".")[2]
    proxy.__module__ = "cupy"
    return proxy


@functools.cache
def forwarded(qualname: str):
    """The op-issuing proxy of the allow-listed function *qualname*, for client code that
    checks its arguments first (``piecewise``)."""
    return _function(qualname, api.FUNCTIONS[qualname])


# ---------------------------------------------------------------- host-side helpers

def _upload(session: Any, host: np.ndarray) -> Any:
    """Upload *host*; one that is F- but not C-contiguous stays F-ordered, as in CuPy.

    Returns the remote array and whether it is the freshly uploaded buffer
    itself (False: an F-ordered copy made on the device).
    """
    fortran = host.ndim > 1 and host.flags.f_contiguous and not host.flags.c_contiguous
    fresh = nd.wrap(session, session.new_id())
    session.upload(host.T if fortran else host, fresh._h)  # host.T is C-contiguous: no copy
    if not fortran:
        return fresh, True
    view = nd.call(session, m.KIND_FUNCTION, "transpose", api.ARRAY, None, (fresh,), {},
                   "cupy.asarray")
    return nd.call(session, m.KIND_FUNCTION, "array", api.ARRAY, None, (view,), {"order": "F"},
                   "cupy.asarray"), False


def upload_array(session: Any, host: np.ndarray) -> Any:
    """*host* uploaded to *session*'s device, a new array in its layout."""
    return _upload(session, host)[0]


def _moved(a: Any, session: Any) -> Any:
    """An array of another of the client's devices copied to *session*'s, as CuPy's
    ``array``/``asarray`` copy it to the current device; anything else as it is."""
    owner = getattr(a, "_s", None) if isinstance(a, nd.ndarray) else None
    if owner is None or owner is session or session.group is None or owner not in session.group:
        return a
    return move_array(a, session, "K")


def asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> Any:
    """``cupy.asarray``: host NumPy data is uploaded as one zero-copy frame."""
    session = active_session()
    if session.group is not None:
        a = _moved(a, session)
    if isinstance(a, nd.ndarray) and dtype is None and order in (None, "K", "A"):
        return a
    if isinstance(a, np.ndarray):
        a, _ = _upload(session, a)
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
    if isinstance(obj, nd.ndarray) and copy is not True and ndmin <= obj.ndim and obj._fits(dtype, order):
        return obj   # no copy needed: CuPy returns the array itself
    if isinstance(obj, np.ndarray):
        obj, c_order = _upload(session, obj)
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
    """``cupy.get_array_module``: the proxy ``cupy`` if any argument is a remote array."""
    if any(isinstance(arg, nd.ndarray) for arg in args):
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
        proxy = ufuncs.make_ufunc(qualname) or _function(qualname, want)
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
    from .random import build_random_modules   # (its modules need this one's active_session)
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


def proxy_cupy() -> types.ModuleType:
    """The proxy ``cupy`` module (for client-side helpers written over its functions)."""
    return build_modules()["cupy"]


def module_for(session: Any) -> types.ModuleType:
    activate(session)
    return build_modules()["cupy"]
