"""CuPy's functions that read host data or files, run on the client.

``cupy.frombuffer``, ``fromstring``, ``fromiter``, ``fromfile``, ``load``,
``loadtxt``, ``genfromtxt`` build their array on the host with NumPy and upload it;
``save``, ``savez``, ``savez_compressed`` and ``savetxt`` download theirs and write
with NumPy. This is what CuPy itself does (it reads into host memory, then copies),
and it keeps the pool away from files: the allow-list has no I/O, and a file named
by a client is the *client's* file. ``fromfunction`` calls the user's function here,
on the client, with remote index arrays (each op it makes is forwarded), exactly as
CuPy calls it with device arrays; nothing of it runs in the pool. ``mgrid``,
``ogrid`` and ``broadcast`` need only their slices or the arrays' metadata.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import ndarray as nd
from .state import proxy_cupy

__all__ = ["HOST_FUNCTIONS", "HOST_OBJECTS"]


def _upload(host: Any) -> Any:
    return proxy_cupy().array(np.asarray(host))


def _to_host(value: Any) -> Any:
    return value.get() if isinstance(value, nd.ndarray) else value


def _read_here(reader: Any) -> Any:
    """``cupy.<name>`` for a NumPy reader: NumPy builds the array here, then it is uploaded."""
    def function(*args: Any, **kwargs: Any) -> Any:
        return _upload(reader(*args, **kwargs))
    function.__name__ = function.__qualname__ = reader.__name__
    function.__doc__ = f"``cupy.{reader.__name__}``: NumPy's, run on the client; the result is uploaded."
    return function


_READERS = [_read_here(reader) for reader in (
    np.frombuffer, np.fromstring, np.fromiter, np.fromfile, np.loadtxt, np.genfromtxt)]


class NpzFile:
    """``cupy.load`` of an ``.npz``: NumPy's archive, each member uploaded when read."""

    def __init__(self, npz: Any) -> None:
        self.npz = npz

    def __enter__(self) -> "NpzFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getitem__(self, key: str) -> Any:
        return _upload(self.npz[key])

    def __contains__(self, key: str) -> bool:
        return key in self.npz

    def __iter__(self):
        return iter(self.npz)

    def keys(self):
        return self.npz.keys()

    @property
    def files(self) -> list:
        return self.npz.files

    def close(self) -> None:
        self.npz.close()


def load(file: Any, mmap_mode: Any = None, allow_pickle: bool = False, *args: Any, **kwargs: Any) -> Any:
    """``cupy.load``: an ``.npy`` array uploaded, or an ``.npz`` archive (:class:`NpzFile`)."""
    obj = np.load(file, mmap_mode, allow_pickle, *args, **kwargs)
    if isinstance(obj, np.lib.npyio.NpzFile):
        return NpzFile(obj)
    if isinstance(obj, nd.ndarray):   # a pickled remote array (ndarray.dump), unpickled here
        return obj
    return _upload(obj)


def save(file: Any, arr: Any, *args: Any, **kwargs: Any) -> None:
    np.save(file, _to_host(arr), *args, **kwargs)


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    np.savez(file, *map(_to_host, args), **{k: _to_host(v) for k, v in kwds.items()})


def savez_compressed(file: Any, *args: Any, **kwds: Any) -> None:
    np.savez_compressed(file, *map(_to_host, args), **{k: _to_host(v) for k, v in kwds.items()})


def savetxt(fname: Any, X: Any, *args: Any, **kwargs: Any) -> None:
    np.savetxt(fname, _to_host(X), *args, **kwargs)


def fromfunction(function: Any, shape: Any, *, dtype: Any = float, like: Any = None,
                 **kwargs: Any) -> Any:
    """``cupy.fromfunction``: *function* runs here with remote index arrays."""
    return function(*proxy_cupy().indices(shape, dtype=dtype), **kwargs)


# NumPy's signatures exactly, annotations included (none), as CuPy's aliases have them
def base_repr(number, base=2, padding=0):
    """``cupy.base_repr``: the string of *number* in *base* (NumPy's, on the client)."""
    return np.base_repr(number, base, padding)


def binary_repr(num, width=None):
    """``cupy.binary_repr``: the binary string of *num* (NumPy's, on the client)."""
    return np.binary_repr(num, width)


HOST_FUNCTIONS = {f.__name__: f for f in (
    *_READERS, load, save, savez, savez_compressed, savetxt, fromfunction, base_repr, binary_repr)}
for _f in HOST_FUNCTIONS.values():
    _f.__module__ = "cupy"


class _Grid:
    """``cupy.mgrid`` / ``cupy.ogrid``: the grid depends on the slices alone, so NumPy builds
    it here and it is uploaded (dtype and values as NumPy's, which CuPy's follow)."""

    def __init__(self, reference: Any) -> None:
        self._reference = reference

    def __getitem__(self, key: Any) -> Any:
        if _has_array_bounds(key):
            return _grid_over_arrays(key, self._reference is np.ogrid)
        grid = self._reference[_host_slices(key)]
        if isinstance(grid, (list, tuple)):   # ogrid: a list, as CuPy's (NumPy 2 gives a tuple)
            return [_upload(g) for g in grid]
        return _upload(grid)


def _has_array_bounds(key: Any) -> bool:
    """Whether a slice's bound is a remote array of more than one element (the grid then
    broadcasts against it, and is no longer a function of the slices alone)."""
    slices = key if isinstance(key, tuple) else (key,)
    return any(isinstance(v, nd.ndarray) and v.size != 1
               for k in slices if isinstance(k, slice) for v in (k.start, k.stop))


def _grid_over_arrays(key: Any, sparse: bool) -> Any:
    """``mgrid[x:y:nj]``, ``mgrid[x:y:nj, x:y:nj]`` with array bounds: CuPy's own formula
    (``nd_grid.__getitem__``), points times step plus start, run on the remote arrays."""
    cupy = proxy_cupy()

    def start_step(k: slice) -> tuple:
        start = 0 if k.start is None else k.start
        step = 1 if k.step is None else k.step
        if isinstance(step, complex):
            points = int(abs(step))
            step = (k.stop - start) / float(points - 1) if points != 1 else points
        return start, step

    if isinstance(key, slice):
        start, step = start_step(key)
        if isinstance(key.step, complex):
            return cupy.arange(0, int(abs(key.step)), 1, float) * step + start
        return cupy.arange(start, key.stop, step)
    sizes, typ = [], int
    for k in key:
        start = 0 if k.start is None else k.start
        step = 1 if k.step is None else k.step
        if isinstance(step, complex):
            sizes.append(int(abs(step)))
            typ = float
        else:
            sizes.append(int(math.ceil((k.stop - start) / (step * 1.0))))
        if any(isinstance(v, float) for v in (step, start, k.stop)):
            typ = float
    grids = ([cupy.arange(n, dtype=typ) for n in sizes] if sparse
             else cupy.indices(sizes, typ))
    for i, k in enumerate(key):
        start, step = start_step(k)
        grids[i] = grids[i] * step + start
    if sparse:
        for i in range(len(sizes)):
            grids[i] = grids[i][tuple(slice(None) if j == i else None for j in range(len(sizes)))]
    return grids


def _host_slices(key: Any) -> Any:
    """Slices whose bounds are remote 0-d arrays (``mgrid[x:y:10j]``) with host scalars."""
    if isinstance(key, tuple):
        return tuple(_host_slices(k) for k in key)
    if isinstance(key, slice):
        return slice(*(v.item() if isinstance(v, nd.ndarray) else v
                       for v in (key.start, key.stop, key.step)))
    return key


mgrid = _Grid(np.mgrid)
ogrid = _Grid(np.ogrid)


class broadcast:
    """``cupy.broadcast``: the broadcast shape, from the arrays' metadata; ``values`` are the
    arrays broadcast to it (remote views)."""

    def __init__(self, *arrays: Any) -> None:
        shapes = [a.shape if isinstance(a, nd.ndarray) else np.shape(a) for a in arrays]
        self.shape = np.broadcast_shapes(*shapes)
        self.nd = self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.values = tuple(proxy_cupy().broadcast_to(a, self.shape) for a in arrays)


HOST_OBJECTS = {"mgrid": mgrid, "ogrid": ogrid, "broadcast": broadcast}
