"""The op-issuing proxies of the allow-listed functions (``cupy.exp``, ``cupy.linalg.svd``,
``cupyx.scipy.ndimage.zoom``): each call is one op on the session of the current device,
its result shaped as CuPy gives it (a named tuple, an ``output`` array written into, a
NumPy argument's own method answered on the host)."""

from __future__ import annotations

import functools
import types
from typing import Any, NamedTuple

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import ndarray as nd
from .device_group import like_on_current
from .state import active_session

__all__ = ["function_proxy", "forwarded"]


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


def function_proxy(qualname: str, want: str):
    """The op-issuing proxy of the allow-listed function *qualname* (``cupy.exp``), whose
    result kind is *want*."""
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
    return function_proxy(qualname, api.FUNCTIONS[qualname])
