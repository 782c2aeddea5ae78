"""The NumPy device: the whole pool on a host with no GPU.

CI, ``gpuwb demo`` on a laptop and the differential tests run on it. It
follows CuPy's conventions where they differ from NumPy's (reductions return
0-d arrays, not scalars; out-of-range index arrays wrap; floats convert to
integers as a GPU converts them) and counts the bytes a session's arrays hold so that
memory limits behave as on a GPU. CUDA-only features fail with a clear error.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
from typing import Any

import numpy as np

from ..protocol import api
from ..protocol.codec import device_dtype, unsupported_dtype
from ..protocol.errors import OutOfMemoryError
from ..protocol.fused_programs import check_program
from .base import Device
from .fused_functions import replaying
from .function_tables import (lazy_functions, resolve_table, signal_object_class, sparse_lu_class,
                              sparse_object_class)
from .interface_views import HostInterfaceView, interface_bytes
from .host_bytes import HostBytes
from .swap_file_io import write_private
from .host_capture import HostCaptures
from .host_casts import converting_functions, converting_methods, converting_operators
from .host_fields import FIELD_CHECKED_OPERATORS
from .host_graphs import HostGraphTools
from .host_sizes import limit_process_data, sized_methods, sized_operators, sized_table
from .host_fft import HostFFTPlan, accepting_plans, make_plan
from .host_indices import wrapping_functions, wrapping_methods, wrapping_operators
from .host_random import (HOST_BIT_GENERATORS, HostGenerator, HostRandomState, host_generator_state,
                          seed_sequence_factory, set_host_generator_state)

__all__ = ["NumpyDevice"]

#: CuPy's random generators, stood in for by NumPy's (see host_random).
_HOST_OBJECTS: dict[str, tuple[Any, type]] = {
    "random.RandomState": (HostRandomState, HostRandomState),
    "random.Generator": (HostGenerator, HostGenerator),
    **{f"random.{name}": (seed_sequence_factory(cls), cls) for name, cls in HOST_BIT_GENERATORS.items()},
    "cufft.Plan": (make_plan, HostFFTPlan),
}


_byte_bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or np.byte_bounds


def _fresh(result: Any, params: list) -> Any:
    """A fused function's output as a new array where it is one of its parameters itself
    (``return x``): a kernel writes its outputs to arrays of their own."""
    return result.copy() if any(result is p for p in params) else result


def _scatter(ufunc):
    def scatter(a, slices, value):
        ufunc.at(a, slices, value)
    scatter.__name__ = f"scatter_{ufunc.__name__}"
    return scatter


def _polyder(p, m):
    """CuPy's ``_savitzky_golay._polyder`` (columns of coefficients differentiated *m*
    times): SciPy's, which also asks for the array namespace."""
    from scipy.signal._savitzky_golay import _polyder as polyder
    return polyder(p, m, xp=np)


def _rsqrt(x, out=None):
    return np.divide(1, np.sqrt(x), out=out)


def _sparse_bytes(kind: str, args: tuple, kwargs: dict) -> int:
    """About how many bytes SciPy's *kind* allocates for these arguments (index arrays of
    a shape, a diagonal, a density's entries, a Kronecker product's entries)."""
    def ints(*values: Any) -> bool:
        return all(isinstance(v, int) for v in values)

    shape = kwargs.get("shape")
    if kind in ("eye", "identity", "rand", "random") and args and ints(args[0]):
        m = args[0]
        n = args[1] if len(args) > 1 and ints(args[1]) else kwargs.get("n") or m
        shape = (m, n)
    elif shape is None and args and isinstance(args[0], tuple) and len(args[0]) == 2:
        shape = args[0]   # csr_matrix((M, N)): an empty matrix of that shape
    need = 0
    if isinstance(shape, tuple) and len(shape) == 2 and ints(*shape):
        need = (max(shape) + 1) * 8
        if kind in ("rand", "random"):
            density = args[2] if len(args) > 2 else kwargs.get("density", 0.01)
            need += int(shape[0] * shape[1] * float(density)) * 24
    if kind == "kron" and len(args) >= 2:
        sizes = [getattr(a, "nnz", getattr(a, "size", 0)) for a in args[:2]]
        need += int(sizes[0]) * int(sizes[1]) * 24
    return need


#: Operators whose function is, on arrays, this ufunc (``pow`` left out: NumPy squares for
#: a scalar exponent of 2, not so for the 0-d buffer a graph passes)
_DIRECT_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                     "truediv": np.true_divide, "floordiv": np.floor_divide, "mod": np.remainder,
                     "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor,
                     "lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal,
                     "ge": np.greater_equal, "gt": np.greater, "neg": np.negative,
                     "pos": np.positive, "abs": np.absolute, "invert": np.invert}


class NumpyDevice(Device):
    kind = "numpy"
    array_type = np.ndarray
    tracks_memory = True   # NumPy has no memory pool with a limit: the table counts
    operators = FIELD_CHECKED_OPERATORS

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self.graph_tools = HostGraphTools()
        self.captures = HostCaptures(self)   # CuPy's graph API, emulated (host_capture)
        # One zero-copy frame is best on the host (stream_bytes None); a worker's
        # settings (GPUWB_STREAM_BYTES) make this device stream like a GPU does, so tests
        # exercise that path without one.
        self.functions = resolve_table(
            {"": np, "linalg.": np.linalg, "fft.": np.fft},
            {
                "cupyx.scatter_add": _scatter(np.add),
                "cupyx.scatter_max": _scatter(np.maximum),
                "cupyx.scatter_min": _scatter(np.minimum),
                "cupyx.rsqrt": _rsqrt,
                # cupyx.scipy's reference: SciPy, where installed; CuPy's private IIR
                # recurrences (SciPy has no such module): host_iir
                **lazy_functions({**{f"cupyx.scipy.{sub}.": f"scipy.{sub}" for sub in api.SCIPY_SUBMODULES},
                                  "cupyx.scipy.sparse.": "scipy.sparse",
                                  "cupyx.scipy.signal._iir_utils.": f"{__package__}.host_iir",
                                  "cupyx.scipy.signal._iir_filter_conversions.":
                                      "scipy.signal._filter_design"}),
                **lazy_functions({f"polynomial.{sub}.": f"numpy.polynomial.{sub}"
                                  for sub in api.POLYNOMIAL_SUBMODULES}),
                "cupyx.scipy.signal._savitzky_golay._polyder": _polyder,
            },
        )
        for name, fn in list(self.functions.items()):   # CuPy's plan= keyword, where it has one
            if name.startswith(("cupyx.scipy.fft.", "cupyx.scipy.fftpack.")):
                self.functions[name] = accepting_plans(fn)
        self._build_methods()
        # as a GPU does: index arrays wrap (host_indices), floats convert to integers so (host_casts)
        self.functions = converting_functions(wrapping_functions(self.functions))
        self.methods = converting_methods(wrapping_methods(self.methods))
        operators = converting_operators(wrapping_operators(FIELD_CHECKED_OPERATORS))
        # ops whose output size is known are refused before NumPy allocates (host_sizes)
        self.functions = sized_table(self.functions, self.check_output)
        self.operators = sized_operators(operators, self.check_output)
        self.methods = sized_methods(self.methods, self.check_output)
        self.limit = 1 << 62
        #: the device's memory shared with its other sessions (host_memory_board.py), and
        #: the worker's way to ask the pool for room in it (others swapped out), or None
        self.board = None
        self.make_room = None
        #: the device's compute shared with its other sessions' workers (host_turns), or None
        self.turns = None
        # Bytes are counted per owning buffer, so views cost nothing extra.
        self._owners: dict[int, list] = {}  # id(owner) -> [owner, refcount, nbytes]
        self.used = 0
        self._fused: dict[str, Any] = {}   # cupy.fuse's programs, by their text

    def direct_ufunc(self, kind: str, name: Any, args: list, kwargs: dict) -> tuple | None:
        """An arithmetic or comparison operator, or a function that is a NumPy ufunc: that
        ufunc, which the recorded graphs launch into the result's own memory where it gives
        the same bits (host_graphs checks it once, at capture)."""
        if type(name) is not str:
            return None
        ufunc = None
        if kind == "o" and not kwargs:
            ufunc = _DIRECT_OPERATORS.get(name)
        elif kind == "f" and name in api.UFUNCS and "out" not in kwargs:
            ufunc = getattr(np, name, None)
            ufunc = ufunc if isinstance(ufunc, np.ufunc) else None
        if ufunc is None:
            return None
        return (ufunc if self.turns is None else self.turns.wrap(ufunc), args, kwargs)

    def take_turns(self, turns: Any) -> None:
        """Run each op as one of *turns*: the device's compute taken in turns with its other
        sessions' workers, as a GPU's is (host_turns.DeviceTurns, the pool's
        ``numpy_device_turns``). A recorded graph's launch makes its calls through these
        tables and :meth:`direct_ufunc`, so each of its ops is a turn, as a CUDA graph's
        kernels time-slice with other contexts'."""
        wrap = turns.wrap
        self.functions = {name: wrap(fn) for name, fn in self.functions.items()}
        self.methods = {name: wrap(fn) for name, fn in self.methods.items()}
        self.operators = {name: wrap(fn) for name, fn in self.operators.items()}
        self.turns = turns

    def set_memory_limit(self, nbytes: int) -> None:
        self.limit = int(nbytes)

    def run_kernel(self, kind: Any, definition: Any, args: list, kwargs: dict) -> Any:
        """``cupy.fuse``'s programs run here, their calls one by one (NumPy has no kernels to
        fuse into: the values are those of the same calls unfused); other kernels need a GPU."""
        if kind != "fuse":
            return super().run_kernel(kind, definition, args, kwargs)
        key = repr(definition)
        fused = self._fused.get(key)
        if fused is None:
            fused = self._fused[key] = replaying(check_program(definition), self.functions,
                                                 self.operators, self._fused_method)
        result = fused(*args, **kwargs)
        if isinstance(result, tuple):
            return tuple(_fresh(r, args) for r in result)
        return _fresh(result, args)

    def _fused_method(self, target: Any, name: str, args: list, kwargs: dict) -> Any:
        method = self.methods.get(name)
        if method is None:
            raise NotImplementedError(f"method {name!r} is not available on the numpy device")
        return method(target, *args, **kwargs)

    def object_class(self, name: str) -> tuple[Any, type] | None:
        entry = _HOST_OBJECTS.get(name)
        if entry is None:   # SciPy's systems and chirp z-transforms stand in for CuPy's
            entry = signal_object_class("scipy.signal", name)
        if entry is None:   # and SciPy's sparse matrices, sized against the session's limit
            entry = sparse_object_class("scipy.sparse", name)
            if entry is not None:
                entry = (self._sized_sparse(entry[0], name.removeprefix("sparse.")), entry[1])
        if entry is None:   # SciPy's LU factorizations stand in for CuPy's (which use them)
            entry = sparse_lu_class("scipy.sparse.linalg", name)
        return entry

    def generator_state(self, generator: Any) -> Any:
        return host_generator_state(generator)

    def set_generator_state(self, generator: Any, state: Any) -> None:
        set_host_generator_state(generator, state)

    def object_member(self, value: Any) -> Any:
        """SciPy's ``SuperLU`` gives ``L`` and ``U`` as CSC sparse *arrays*; CuPy's holds them
        as ``csr_matrix`` (it converts SciPy's with ``tocsr()``): the same here."""
        import scipy.sparse
        if isinstance(value, scipy.sparse.sparray):
            return scipy.sparse.csr_matrix(value.tocsr())
        return value

    def _sized_sparse(self, make: Any, kind: str) -> Any:
        """A sparse matrix's arrays are host memory the handle table does not count, and
        NumPy's zeros would take any size lazily: what a matrix of the asked shape (or
        ``eye``'s diagonal, ``random``'s density, ``kron``'s product) needs is checked
        against the session's limit first."""
        def sized(*args: Any, **kwargs: Any) -> Any:
            need = _sparse_bytes(kind, args, kwargs)
            self._check_room(self.used + need, need, f" (cupyx.scipy.sparse.{kind})")
            return make(*args, **kwargs)
        return sized

    def _check_room(self, total: int, nbytes: int, what: str = "") -> None:
        """Refuse (OutOfMemoryError for *nbytes*, *what* they are for) unless the session may
        hold *total* bytes: within its limit (or what its user's quota grants it) and, where
        the device's memory is shared (a board), beside the other sessions' (the pool
        swapping idle ones out to make room). A full device's error says so and is marked
        ``device_full`` (its text is then the device's own, not the session's budget)."""
        if total > self.limit and not self._grown(total):
            raise OutOfMemoryError(f"Out of memory allocating {nbytes:,} bytes{what}")
        board = self.board
        if board is None or board.fits(total):
            return
        short = total - (board.capacity - board.others())
        if self.make_room is not None and self.make_room(short) and board.fits(total):
            return
        exc = OutOfMemoryError(
            f"Out of memory allocating {nbytes:,} bytes{what}: the device's memory is full "
            f"({board.others():,} of {board.capacity:,} bytes held by its other sessions, none "
            f"of which could be swapped out: each is busy, or its user's swap cap is reached)")
        exc.device_full = True
        raise exc

    def _grown(self, need: int) -> bool:
        """Whether the session's user quota granted *need* bytes in all (see worker.grants)."""
        return self.grant is not None and self.grant.grow(need)

    def as_array(self, value: Any) -> Any:
        if isinstance(value, (np.generic, bool, int, float, complex)) or type(value) is np.matrix:
            value = np.asarray(value)   # (SciPy's sparse todense(): CuPy's is an ndarray)
        if isinstance(value, np.ndarray) and not device_dtype(value.dtype):
            # a GPU array holds numbers only: no objects (their bytes are pointers), strings, dates
            raise unsupported_dtype(value.dtype)
        return value

    def from_host(self, host: np.ndarray) -> np.ndarray:
        return host

    def to_host(self, array: np.ndarray) -> np.ndarray:
        # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
        return array if array.flags.c_contiguous else array.copy(order="C")

    def memory_used(self) -> int:
        return self.used

    def memory_span(self, array: np.ndarray) -> tuple[int, int, int]:
        root = array   # the allocation: views followed down to the array owning memory,
        while True:    # and an array made over memory named by address to that memory's
            base = root.base
            if isinstance(base, np.ndarray):
                root = base
            elif isinstance(base, HostInterfaceView) and base.owner is not None:
                root = base.owner
            else:
                break
        start, end = _byte_bounds(root)
        return (array.__array_interface__["data"][0] if array.size else 0), start, end - start

    def data_span(self, array: np.ndarray) -> tuple[int, int, int]:
        """As CuPy reports them: an array made over memory named by address (or a view of
        one) has the memory CuPy would have made for that view, at the view's address and
        of the size CuPy takes from its shape and strides (:func:`interface_bytes`);
        other arrays their allocation (:meth:`memory_span`)."""
        base = array.base
        while isinstance(base, np.ndarray):
            base = base.base
        if not isinstance(base, HostInterfaceView) or base.pointed:   # (memptr=p: p's memory)
            return self.memory_span(array)
        desc = base.__array_interface__
        size = interface_bytes(desc["shape"], desc["strides"], np.dtype(desc["typestr"]).itemsize)
        return (array.__array_interface__["data"][0] if array.size else 0), desc["data"][0], size

    def allocation_bytes(self, array: np.ndarray, chunk: int):
        # (views of the memory itself, valid while *array* lives: the swap file's threads
        # may hold them all, so what is sent back is not needed)
        _ptr, start, size = self.memory_span(array)
        whole = (ctypes.c_uint8 * size).from_address(start)   # (alive: *array* holds it)
        view = memoryview(whole).cast("B")
        for at in range(0, size, chunk):
            yield view[at:at + chunk]

    def allocation_from(self, f: Any, size: int, chunk: int) -> np.ndarray:
        block = np.empty(size, np.uint8)   # (*f*'s threads read into it: swap_file_io.py)
        f.fill(block, chunk)
        return block

    def allocations_to_host(self, arrays: list) -> HostBytes:
        """A copy in new host memory: the device's own memory is host memory too, but the
        session's is counted on its board and handed back as a GPU's is, so its bytes move
        as on a GPU (and the same code is tested)."""
        spans = [self.memory_span(a)[1:] for a in arrays]
        copy = np.empty(sum(size for _start, size in spans), np.uint8)
        at = 0
        for start, size in spans:
            np.copyto(copy[at:at + size],
                      np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(start)))
            at += size
        return HostBytes(copy)

    def allocations_from_host(self, copy: HostBytes, sizes: list[int]) -> list:
        blocks, at = [], 0
        for size in sizes:
            block = np.empty(size, np.uint8)
            np.copyto(block, copy.array[at:at + size])
            blocks.append(block)
            at += size
        return blocks

    def view_of(self, block: np.ndarray, offset: int, shape: tuple, dtype: np.dtype,
                strides: tuple) -> np.ndarray:
        return np.ndarray(shape, dtype, buffer=block, offset=offset, strides=strides)

    def empty_array(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def lend_allocations(self, arrays: list, directory: Any, name: str) -> list | None:
        """The NumPy device's memory is its process's own, which no other process maps:
        each allocation is copied to a file of *directory* (0600, never over another),
        which the borrower maps and the lender deletes when the loan ends. The stand-in
        for a GPU's CUDA IPC: the same steps of a move, through a copy."""
        loan: list = []
        try:
            for i, array in enumerate(arrays):
                _ptr, start, size = self.memory_span(array)
                path = os.path.join(str(directory), f"{name}-lent-{i}")
                write_private(path, (ctypes.c_uint8 * size).from_address(start))
                loan.append([path, 0, size])
        except OSError:
            self.end_loan(loan)
            return None
        return loan

    def end_loan(self, loan: list) -> None:
        for path, _offset, _size in loan:
            try:
                os.unlink(path)
            except OSError:
                pass

    @contextlib.contextmanager
    def borrowed_allocations(self, loan: list):
        yield [np.memmap(path, np.uint8, "r", offset, (size,)) for path, offset, size in loan]

    def copy_allocation(self, block: Any) -> np.ndarray:
        self._check_room(self.used + block.nbytes, block.nbytes)
        new = np.empty(block.nbytes, np.uint8)
        np.copyto(new, block)
        return new

    def base_of(self, array: np.ndarray) -> Any:
        base = array.base   # bytes of an upload, a buffer: memory no array of the session owns
        return base if isinstance(base, np.ndarray) else None

    # -- accounting, called by the handle table -------------------------------
    @staticmethod
    def _owner(array: np.ndarray) -> Any:
        """What holds *array*'s memory: the first array of its chain of views, the buffer
        of an upload, or the array behind a view taken by address."""
        owner = array
        while True:
            if isinstance(owner, np.ndarray) and owner.base is not None:
                owner = owner.base
            elif isinstance(owner, HostInterfaceView) and owner.owner is not None:
                owner = owner.owner
            else:
                return owner

    def track(self, array: np.ndarray) -> None:
        owner = self._owner(array)
        entry = self._owners.get(id(owner))
        if entry is not None:
            entry[1] += 1
            return
        if isinstance(owner, np.ndarray):
            nbytes = owner.nbytes
        elif isinstance(owner, HostInterfaceView):
            nbytes = 0
        else:
            try:
                nbytes = memoryview(owner).nbytes
            except TypeError:   # memory a library object holds (SciPy's SuperLU's perm_r)
                nbytes = array.nbytes
        if nbytes:
            self._check_room(self.used + nbytes, nbytes)
        self._owners[id(owner)] = [owner, 1, nbytes]
        self.used += nbytes
        if self.board is not None:
            self.board.set_used(self.used)

    def untrack(self, array: np.ndarray) -> None:
        owner = self._owner(array)
        entry = self._owners.get(id(owner))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._owners[id(owner)]
            self.used -= entry[2]
            if self.board is not None:
                self.board.set_used(self.used)

    def check_allocation(self, name: str, args: list, kwargs: dict) -> None:
        """Before a creation call the device sizes (and before every remote object's
        method, which comes through here: while a capture records, it is refused where
        CuPy refuses it or where it cannot be recorded, devices/capture_refusals.py)."""
        if self.captures.routed:
            self.captures.check_object_call(name, args)
        if name not in api.CREATION_WITH_SHAPE:
            return
        if name.startswith("random."):
            shape = tuple(args)
            try:
                dtype = np.dtype(np.float64 if kwargs.get("dtype") is None else kwargs["dtype"])
            except TypeError:
                return
        else:
            shape = args[0] if args else kwargs.get("shape", ())
            dtype = kwargs.get("dtype")  # not `or`: a numpy.dtype instance is falsy (no fields)
            if dtype is None:
                dtype = (args[2] if name == "full" and len(args) > 2
                         else args[1] if name != "full" and len(args) > 1 else None)
            try:
                dtype = np.dtype(dtype if dtype is not None else np.float64)
            except TypeError:
                return  # let NumPy report the bad dtype itself
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            count = math.prod(int(n) for n in shape)
        except (TypeError, ValueError):
            return
        if count > 0:
            self.check_output(count * dtype.itemsize)

    def check_output(self, nbytes: int) -> None:
        """Refuse an op that would make *nbytes* of new arrays past the session's memory (its
        limit, or what its user's quota grants it), before NumPy allocates them."""
        self._check_room(self.used + nbytes, nbytes)

    def bound_process(self, session_limit: int) -> None:
        """Cap the worker's private memory near the session's limit: what no rule of
        host_sizes sizes beforehand fails there (an OutOfMemoryError) rather than taking
        the host's memory."""
        limit_process_data(session_limit)

    def info(self) -> dict[str, Any]:
        return {"kind": self.kind, "index": self.index, "name": "NumPy (host CPU)",
                "memory_total": None, "numpy": np.__version__, "stream_bytes": self.stream_bytes}
