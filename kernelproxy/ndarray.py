"""``cupy.ndarray`` for a remote GPU: a handle plus cached metadata.

An array is a session and a handle id. Its shape, dtype, strides and flags
arrive with the reply of the batch that created it and are cached; asking
for them before that reply has arrived is a sync point. Values (``float``,
``repr``, ``item``, ``tolist``, ``get``) always travel from the pool, so a
huge array is printed without transferring it.
"""

from __future__ import annotations

import math
import os
import pickle
import weakref
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .cuda import Device
from .flags import Flags
from .flatiter import flatiter
from .inplace_shape import view_shape
from .issue import FUSING, UFUNC_SCALAR_TYPES, call, register_array_class, wrap
from .issue import operator as _operator
from .memory import array_at, memory_of
from .operators import install_operators
from .state import active_session, current_session_of, namespace, proxy_cupy
from .subclasses import as_subclass, view_of_subclass
from .ufuncs import array_ufunc
from .uploads import move_array

__all__ = ["ndarray", "Flags", "call", "wrap", "FUSING", "UFUNC_SCALAR_TYPES"]

_ARRAY, _NONE, _MULTI = api.ARRAY, api.NONE, api.MULTI
_weak = weakref.ref
_type = type   # ndarray.view's argument named type hides the builtin there


def _from_pickle(host: np.ndarray) -> "ndarray":
    """Unpickling a remote array: its host copy uploaded to the active session."""
    return proxy_cupy().array(host)


#: NumPy functions that a remote array answers from its metadata, with the
#: host helpers of the ``cupy`` module (``numpy.shape(x)``, ``numpy.result_type(x, 1.0)``).
_HOST_DISPATCH = frozenset(
    "result_type can_cast common_type ndim shape size iscomplexobj isrealobj".split())

class ndarray:
    """An array on a remote GPU; behaves as ``cupy.ndarray``."""

    __slots__ = ("_s", "_h", "_m", "__weakref__")
    __array_priority__ = 100
    _remote_array = True   # what the session's encoder knows a subclass's instances by
    __hash__ = None  # type: ignore[assignment]

    def __new__(cls, *args: Any, _obj: Any = None, _no_init: bool = False, **kwargs: Any):
        """Made here rather than in ``__init__``, as CuPy's, so that a subclass's ``__new__``
        may take arguments of its own; a subclass's ``__array_finalize__(None)`` follows."""
        arr = object.__new__(cls)
        if _no_init:
            return arr
        arr._init(*args, **kwargs)
        if cls is not ndarray:
            arr.__array_finalize__(_obj)
        return arr

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: :meth:`__new__` made the array."""

    def _init(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        session = active_session()
        if memptr is not None or strides is not None:   # a view of memory named by pointer
            memory = array_at(session, shape, dtype, memptr, strides, order)
            call_name, args, kwargs = "asarray", (memory,), {}
        else:
            call_name, args, kwargs = "empty", (shape, dtype), {"order": order}
        self._s = session
        self._h = session.new_id()
        self._m = None
        session.arrays[self._h] = _weak(self)
        session.submit(m.KIND_FUNCTION, _ARRAY, self._h, call_name, None, args, kwargs, "cupy.ndarray")
        run = session._run   # (a held stretch's op: its metadata known from the template)
        if run is not None:
            self._m = run.predicted.get(self._h)

    def __array_finalize__(self, obj: Any) -> None:
        """Called on an instance of a subclass made from *obj* (a view, a ufunc's result),
        as in CuPy and NumPy; nothing for ``cupy.ndarray`` itself."""

    def __del__(self) -> None:
        try:
            session, hid = self._s, self._h
            run = session._run
            if run is not None and hid is not None and hid >= run.first_hid:
                run.dropped(hid, self._m is None)   # (a result of a held stretch's run: no record, no metadata)
            elif not session.closed and hid is not None:   # None: handed to a subclass's
                session.release(hid, self._m is None)
        except Exception:  # interpreter shutdown or a half-built object
            pass

    # ------------------------------------------------------------ metadata
    def _meta(self) -> tuple:
        meta = self._m
        if meta is None:
            meta = self._m = self._s.meta_of(self._h)
        return meta

    @property
    def shape(self) -> tuple[int, ...]:
        return self._meta()[0]

    @shape.setter
    def shape(self, value: Any) -> None:
        """In place, as CuPy: a view of the same memory, else ``AttributeError``."""
        view = self.reshape(view_shape(self.shape, self.strides, self.itemsize, value))
        session = self._s   # this array takes over the view's handle, the view this one's
        self._h, view._h, self._m, view._m = view._h, self._h, view._m, self._m
        session.arrays[self._h], session.arrays[view._h] = _weak(self), _weak(view)

    @property
    def dtype(self) -> np.dtype:
        return self._meta()[1]

    @property
    def strides(self) -> tuple[int, ...]:
        return self._meta()[2]

    @property
    def flags(self) -> Flags:
        return Flags.from_bits(self._meta()[3])

    @property
    def ndim(self) -> int:
        return len(self._meta()[0])

    @property
    def size(self) -> int:
        return math.prod(self._meta()[0])

    @property
    def itemsize(self) -> int:
        return self._meta()[1].itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> "ndarray":
        return self._attribute("T")

    @property
    def mT(self) -> "ndarray":
        return self._attribute("mT")

    @property
    def real(self) -> "ndarray":
        return self._attribute("real")

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> "ndarray":
        return self._attribute("imag")

    @imag.setter
    def imag(self, value: Any) -> None:
        if self.dtype.kind != "c":  # NumPy's imag of a real array is a read-only copy
            raise TypeError("cupy.ndarray does not have imaginary part to set")
        self.imag[...] = value

    @property
    def device(self) -> Any:
        """``cupy.cuda.Device`` of the client's device that holds the array."""
        return Device(self._s.ordinal)

    @property
    def data(self) -> Any:
        """The array's memory on the pool's device (a round trip; see kernelproxy.memory)."""
        return memory_of(self)

    @property
    def base(self) -> "ndarray | None":
        """The array whose memory this one views, the same object as CuPy's (a round trip)."""
        session = self._s
        fresh = session.new_id()   # where the pool puts a base the client no longer holds
        hid = session.value(session.submit(m.KIND_CUDA, _MULTI, fresh, "array.base", self._h,
                                           [], {}, "ndarray.base"))
        if hid is None:
            return None
        hid = int(hid)
        found = session.arrays.get(hid)
        found = found() if found is not None else None
        return found if found is not None else wrap(session, hid)

    @property
    def flat(self) -> Any:
        """A flat iterator over the array (``cupy.flatiter``)."""
        return flatiter(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        raise AttributeError(
            "cupy.ndarray.__cuda_array_interface__ is not available: the array's memory is on "
            "gpu-workbench's remote GPU, which code in this process cannot reach; use .get() "
            "for a host copy")

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise BufferError("a DLPack capsule cannot be made: the array's memory is on "
                          "gpu-workbench's remote GPU; use .get() for a host copy")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)   # kDLCUDA: where the memory is (export itself is refused)

    def toDlpack(self) -> Any:
        return self.__dlpack__()

    def conj(self) -> "ndarray":
        """The array itself when its dtype is known here and not complex (CuPy returns
        ``self``); otherwise the pool's answer (a real array's is then the same memory
        under a second handle: known only after a round trip, which this does not wait for)."""
        meta = self._m or self._s.meta.peek(self._h)
        if meta is not None and meta[1].kind != "c":
            return self
        return call(self._s, m.KIND_METHOD, "conj", _ARRAY, self, (), {}, "ndarray.conj")

    conjugate = conj

    def tobytes(self, order: str = "C") -> bytes:
        return self.get().tobytes(order)

    def __bytes__(self) -> bytes:
        return bytes(self.get())

    def _attribute(self, name: str) -> "ndarray":
        result = call(self._s, m.KIND_ATTRIBUTE, name, _ARRAY, self, (), {}, f"ndarray.{name}")
        return result if type(self) is ndarray else view_of_subclass(result, self)

    # ------------------------------------------------------------ host transfers
    def get(self, stream: Any = None, order: str = "C", out: np.ndarray | None = None,
            blocking: bool = True) -> np.ndarray:
        """Copy to a host NumPy array (a sync point)."""
        host = self._s.download(self)
        if order == "F" or (order == "A" and self.flags.f_contiguous and not self.flags.c_contiguous):
            host = np.asfortranarray(host)
        if out is not None:
            if not (out.flags.c_contiguous or out.flags.f_contiguous):
                raise RuntimeError("Cannot set to non-contiguous array")
            if out.shape != host.shape:
                raise ValueError(f"Shape mismatch. Old shape: {out.shape}, new shape: {host.shape}")
            if out.dtype != host.dtype:
                raise TypeError(f"{host.dtype} array cannot be set to {out.dtype} array")
            out[...] = host
            return out
        return host

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Copy a host array into this one (same shape and dtype, as in CuPy)."""
        arr = np.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        session = self._s
        tmp = wrap(session, session.new_id())
        session.upload(arr, tmp._h)
        session.submit(m.KIND_OPERATOR, _NONE, None, "setitem", None, (self, Ellipsis, tmp), {},
                       "ndarray.set")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly."
        )

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        module = getattr(func, "__module__", "") or ""
        prefix = "" if module in ("numpy", "numpy.core", "numpy._core") else None
        for sub in api.SUBMODULES:
            if module == f"numpy.{sub}":
                prefix = sub + "."
        name = (prefix or "") + func.__name__
        want = api.FUNCTIONS.get(name) if prefix is not None else None
        if want is None:
            if prefix == "" and name in _HOST_DISPATCH:  # metadata only: answered here
                return namespace()["cupy"].__dict__[name](*args, **kwargs)
            return NotImplemented
        return call(self._s, m.KIND_FUNCTION, name, want, None, args, kwargs, f"cupy.{name}")

    # ------------------------------------------------------------ Python protocols
    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self):
        shape = self.shape
        if not shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(shape[0]))

    def __repr__(self) -> str:
        return _operator("repr", (self,), self._s)

    def __str__(self) -> str:
        return _operator("str", (self,), self._s)

    def __format__(self, spec: str) -> str:
        return _operator("format", (self, spec), self._s)

    def _python_scalar(self, kind: str) -> Any:
        if FUSING.depth:
            raise TypeError("Cannot convert to Python scalar in cupy.fuse")
        session = self._s
        trail = session.trailing.trail
        if trail is not None and trail.seq == session._seq and kind != "index":
            # (no op since the last replay: its reply may have brought this array's copy)
            return session.read_value(self, kind, lambda: _operator(kind, (self,), session))
        return _operator(kind, (self,), session)

    def __bool__(self) -> bool:
        return self._python_scalar("bool")

    def __float__(self) -> float:
        return self._python_scalar("float")

    def __int__(self) -> int:
        return self._python_scalar("int")

    def __complex__(self) -> complex:
        return self._python_scalar("complex")

    def __index__(self) -> int:
        return self._python_scalar("index")

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    def __copy__(self) -> "ndarray":
        return self.copy()

    def __deepcopy__(self, memo: dict) -> "ndarray":
        return self.copy()

    def __reduce__(self):
        """Pickled as its host copy (downloaded now, in its memory order) and made a remote
        array of the active session again when unpickled, as CuPy pickles arrays: the
        client pickles and unpickles its own data, the pool never sees a pickle."""
        return _from_pickle, (self.get(order="A"),)

    def dump(self, file: Any) -> None:
        """``ndarray.dump``: pickle the array (its host copy) to *file*, a path or a file."""
        if isinstance(file, (str, os.PathLike)):
            with open(file, "wb") as f:
                pickle.dump(self, f, -1)
        else:
            pickle.dump(self, file, -1)

    def dumps(self) -> bytes:
        """``ndarray.dumps``: the array (its host copy) as a pickle."""
        return pickle.dumps(self, -1)

    def _fits(self, dtype: Any, order: Any) -> bool:
        """Whether this array already has *dtype* (None: any) and the layout *order* asks
        for: then CuPy's ``astype(copy=False)``, ``array(copy=False)``,
        ``ascontiguousarray`` and the like return the array itself."""
        if dtype is not None and np.dtype(dtype) != self.dtype:
            return False
        order = (order or "K").upper()
        flags = self.flags
        return (order == "K" or (order == "A" and (flags.c_contiguous or flags.f_contiguous))
                or (order == "C" and flags.c_contiguous) or (order == "F" and flags.f_contiguous))

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> "ndarray":
        """``ndarray.astype``; with ``copy=False`` an array that needs no conversion is returned itself."""
        if not copy and self._fits(dtype, order):
            return self
        kwargs: dict[str, Any] = {"order": order, "copy": copy}
        if casting is not None:
            kwargs["casting"] = casting
        return call(self._s, m.KIND_METHOD, "astype", _ARRAY, self, (dtype,), kwargs, "ndarray.astype")

    def __getitem__(self, key: Any) -> "ndarray":
        if type(key) is np.ndarray or type(key) is tuple:
            _check_index_arrays(key)
        result = _operator("getitem", (self, key), self._s)
        return result if type(self) is ndarray else view_of_subclass(result, self)

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is np.ndarray or type(key) is tuple:
            _check_index_arrays(key)
        _operator("setitem", (self, key, value), self._s)

    def view(self, dtype: Any = None, type: Any = None) -> "ndarray":
        """A view of the same memory, of another dtype and/or of a subclass (*type*, or a
        subclass given as *dtype*), finalized from this array, as CuPy's."""
        if dtype is not None and isinstance(dtype, _type) and issubclass(dtype, ndarray):
            if type is not None:
                raise ValueError("Cannot specify output type twice.")
            type, dtype = dtype, None
        if type is not None and not (isinstance(type, _type) and issubclass(type, ndarray)):
            raise ValueError("Type must be a sub-type of ndarray type")
        args = () if dtype is None else (dtype,)
        result = call(self._s, m.KIND_METHOD, "view", _ARRAY, self, args, {}, "ndarray.view")
        cls = _type(self) if type is None else type
        return result if cls is ndarray else as_subclass(result, cls, self)

    def byteswap(self, inplace: bool = False) -> "ndarray":
        """The bytes of each element reversed: a new array, or this one swapped in place
        (and returned, as in CuPy)."""
        result = call(self._s, m.KIND_METHOD, "byteswap", _ARRAY, self, (inplace,), {},
                      "ndarray.byteswap")
        return self if inplace else result



def _check_index_arrays(key: Any) -> None:
    """CuPy's IndexError for a host array of floats, objects, strings or structures used as
    an index, raised here at once (objects and strings could not even be sent)."""
    for item in key if type(key) is tuple else (key,):
        if type(item) is np.ndarray and item.dtype.kind not in "biu":
            raise IndexError("arrays used as indices must be of integer or boolean type "
                             f"(actual: {item.dtype.type})")


def _method(name: str, want: str):
    label = f"ndarray.{name}"

    def method(self, *args, **kwargs):
        result = call(self._s, m.KIND_METHOD, name, want, self, args, kwargs, label)
        if type(self) is ndarray or (kwargs and "out" in kwargs) or any(result is a for a in args):
            return result   # (the caller's own output array, as given)
        return view_of_subclass(result, self)

    method.__name__ = name
    doc = getattr(np.ndarray, name, None)
    method.__doc__ = getattr(doc, "__doc__", None)
    return method


for _name, _want in api.METHODS.items():
    if _name not in ndarray.__dict__:  # methods defined above keep their own behaviour
        setattr(ndarray, _name, _method(_name, _want))

del _name, _want

_forwarded_copy = ndarray.copy


def _copy(self, *args: Any, **kwargs: Any) -> "ndarray":
    """``ndarray.copy``: on the current device, as CuPy's, also for an array of another of
    the client's devices (kernelproxy.device_group)."""
    session = self._s
    if session.group is not None:
        here = current_session_of(session)
        if here is not session:
            return move_array(self, here, *args, **kwargs)
    return _forwarded_copy(self, *args, **kwargs)


_copy.__name__, _copy.__doc__ = "copy", _forwarded_copy.__doc__
ndarray.copy = _copy

install_operators(ndarray)
ndarray.__array_ufunc__ = array_ufunc   # NumPy's ufuncs given a remote array
register_array_class(ndarray)
