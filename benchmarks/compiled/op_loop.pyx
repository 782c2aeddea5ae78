# cython: language_level=3, boundscheck=False, wraparound=False
"""Issue 8's last named lever, measured: the worker's op loop with C types.

``Executor._run_ops`` (gpu_backend/worker/executor.py) rewritten as a C loop: C integers
for the counters, the monotonic clock read in C (the same clock as ``time.perf_counter``
on Linux), exact-type checks in C, and the handle table's put and free inlined for devices
that keep no memory account (CuPy's pool enforces its own limit), with the dtype check
cached per dtype. The calls into the library, the msgpack unpacker and the pacer stay the
calls they are: they are the op, the wire format and the accounting. Anything the inline
path does not cover goes back to the executor's own methods, as the Python loop does.

Not part of the package: ``benchmarks/compiled_options.py`` builds it into a temporary copy
of the repository (Cython and a C compiler, as on the GPU image), where
``GPUWB_TYPED_LOOP=1`` makes it ``Executor._run_ops`` (its ``typed`` variants), to set the
compiled loop against the Python one. It repeats the Python loop on purpose: a rewrite of
that loop is what is measured.
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyObject
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

import msgpack

from ..protocol import messages as m
from ..protocol.errors import NotAllowedError, ProtocolError
from .cuda_calls import run_cuda_call
from .handles import _check_dtype
from .objects import run_object_call
from . import executor as _executor

cdef object _ARRAY = _executor._ARRAY
cdef object _OBJECT = _executor._OBJECT
cdef object _OPERATOR = _executor._OPERATOR
cdef object _METHOD = _executor._METHOD
cdef object _FUNCTION = _executor._FUNCTION
cdef object _CHECKED_CREATION = _executor._CHECKED_CREATION
cdef object _DOWNLOAD = m.KIND_DOWNLOAD
cdef object _UPLOAD = m.KIND_UPLOAD
cdef object _INFO = m.KIND_INFO
cdef object _KERNEL = m.KIND_KERNEL
cdef object _CUDA = m.KIND_CUDA
cdef object _KOBJECT = m.KIND_OBJECT
cdef double CANCEL_CHECK = _executor.CANCEL_CHECK_SECONDS
cdef dict _dtype_ok = {}


cdef inline double _now() nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef inline void _put_untracked(dict arrays, object hid, object array) except *:
    """HandleTable.put for a device that keeps no memory account, with the dtype check
    answered once per dtype."""
    if type(hid) is not int or hid <= 0:
        raise ProtocolError(f"bad result handle {hid!r}: clients use positive integers")
    dtype = array.dtype
    cdef PyObject *ok = PyDict_GetItem(_dtype_ok, dtype)
    if ok == NULL:
        _check_dtype(array)           # raises for a refused dtype: nothing stored
        PyDict_SetItem(_dtype_ok, dtype, True)
    PyDict_SetItem(arrays, hid, array)


def run_ops(self, unpacker, payload, metas, fresh, values, downloads, out_frames):
    """The same contract as Executor._run_ops: (ops run, error entry, cancelled)."""
    cdef long executed = 0
    cdef long countdown
    cdef double checked = _now(), now
    cdef bint inline_table
    cdef dict operators, methods, functions, arrays, fresh_d = fresh
    cdef Py_ssize_t at = 0, size
    cdef list head_l, body_l
    seq = None
    unpack = unpacker.unpack
    tell = unpacker.tell
    pacer = self.pacer
    pace = pacer.after_ops
    countdown = pacer.countdown
    cancelled = self.cancelled
    operators, methods, functions = self.device.operators, self.device.methods, self.device.functions
    array_type = self.device.array_type
    table = self.table
    inline_table = not table._tracks and not table.objects
    arrays = table.arrays
    put, free = table.put, table.free
    size = len(self._batch)
    try:
        while True:
            seq = None
            at = tell()
            try:
                head = unpack()
            except msgpack.OutOfData:
                if at != size:
                    raise ProtocolError("truncated op record") from None
                break
            except ValueError as exc:
                raise ProtocolError(f"undecodable op record: {exc}") from None
            if type(head) is int:
                if inline_table and arrays.pop(head, None) is not None:
                    continue
                free(head)
                continue
            if type(head) is not list:
                raise ProtocolError("malformed op record")
            head_l = <list>head
            if PyList_GET_SIZE(head_l) != 5 or type(head_l[0]) is not int:
                raise ProtocolError("malformed op record")
            seq = head_l[0]
            kind = head_l[1]
            want = head_l[2]
            out = head_l[3]
            name = head_l[4]
            self._seq = seq
            try:
                body = unpack()
            except msgpack.OutOfData:
                raise ProtocolError("truncated op record") from None
            except ValueError as exc:
                raise ProtocolError(f"undecodable op arguments: {exc}") from None
            if type(body) is not list:
                raise ProtocolError("malformed op arguments")
            body_l = <list>body
            if PyList_GET_SIZE(body_l) != 3:
                raise ProtocolError("malformed op arguments")
            target = body_l[0]
            args = body_l[1]
            kwargs = body_l[2]
            if type(args) is not list or type(kwargs) is not dict:
                raise ProtocolError("malformed op arguments")
            if pacer.fresh_due:
                pacer.start_segment()
            pacer.began = checked
            if want == _ARRAY and (kind == _OPERATOR or kind == _METHOD or kind == _FUNCTION):
                fn = None
                if type(name) is str:
                    if kind == _OPERATOR:
                        fn = operators.get(name)
                    elif kind == _METHOD:
                        if type(target) is array_type:
                            fn = methods.get(name)
                            if fn is not None:
                                args = [target, *args]
                    elif name not in _CHECKED_CREATION:
                        fn = functions.get(name)
                if fn is not None:
                    result = fn(*args, **kwargs)
                else:
                    result = self._call(kind, name, target, args, kwargs)
                if type(result) is array_type:
                    if inline_table:
                        _put_untracked(arrays, out, result)
                    else:
                        put(out, result)
                    fresh_d[out] = result
                else:
                    self._store(seq, want, out, result, metas, values)
            elif kind == _DOWNLOAD:
                self._download(seq, target, downloads, out_frames)
            else:
                if want == _OBJECT and kind != _KOBJECT:
                    raise NotAllowedError("only a remote object's method makes a new object")
                if kind == _UPLOAD:
                    result = self._upload(seq, name, args, payload)
                elif kind == _INFO:
                    result = self.info()
                elif kind == _KERNEL:
                    result = self.device.run_kernel(name, target, args, kwargs)
                elif kind == _CUDA:
                    result = run_cuda_call(self, name, target, args)
                elif kind == _KOBJECT:
                    result = run_object_call(self, name, target, out, args, kwargs, want)
                else:
                    result = self._call(kind, name, target, args, kwargs)
                self._store(seq, want, out, result, metas, values)
                inline_table = not table._tracks and not table.objects
            executed += 1
            countdown -= 1
            if not countdown:
                countdown = pace(executed, cancelled)
            now = _now()
            if not countdown or (((executed & 31) == 0 or now - checked > CANCEL_CHECK)
                                 and cancelled()):
                self._free_only(unpacker)
                self.ops_run += executed
                return executed, None, True
            checked = now
    except Exception as exc:
        if seq is not None:
            self.poisoned_at = seq
            self._free_rest(at)
        self.ops_run += executed
        return executed, self._error(seq, exc), False
    self.ops_run += executed
    return executed, None, False
