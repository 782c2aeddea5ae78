"""``cupy.cuda`` for a remote GPU: the session's device, streams, events and memory pool.

A session holds one device of the pool; inside it that device is number 0, as a
process that sees one GPU would number it. A client that holds several devices has
one session per device, numbered 0 to n - 1 (kernelproxy.device_group); the current
device, per thread, picks the session that the ``cupy`` functions issue ops on, and
each device's facts are its own session's. What CUDA answers about the device
(properties, attributes, versions) came with the session's hello, so
``runtime.getDeviceProperties`` or ``Device().compute_capability`` cost no round
trip. Events and the memory pool are calls on the session's worker, issued in op
order, so an event recorded between two ops marks exactly that point of the work.

Streams: every op of a session runs in issue order on the session's one CUDA
stream. CuPy's semantics let work on different streams overlap but never promise
it, so running it in order is one of the schedules a program must already be
correct under: results are the same, and what is not reproduced is the overlap
itself. ``Stream.synchronize``, ``Stream.done`` and ``Event.synchronize`` wait for
the session's work, which includes the stream's.

CUDA graphs: ``Stream.begin_capture``/``end_capture``/``is_capturing`` and ``cupy.cuda.Graph``
are CuPy's graph API through the pool (kernelproxy.graphs): a capture is the worker's, and
what it means for the client's streams (which capture, what invalidates a capture) is kept
there; the streams and events here tell it what happens to them.
"""

from __future__ import annotations

import itertools
import types
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import CUDAError, OutOfMemoryError

from . import graphs
from . import memory as remote_memory
from .remote_object import RemoteObject
from .state import INVALID_DEVICE, active_session, current, device_count, primary_session

__all__ = ["build_cuda_modules", "get_default_memory_pool", "get_default_pinned_memory_pool"]

def _session() -> Any:
    """The current device's session."""
    return active_session()


def _device_session(device: int) -> Any:
    """The session of the client's device *device* (checked)."""
    index = _checked(device)
    primary = primary_session()
    return primary if primary.group is None else primary.group[index]


def _facts(device: int | None = None) -> dict:
    """What CUDA answered about the current device, or about *device*."""
    return (_session() if device is None else _device_session(device)).runtime


def _checked(device: Any) -> int:
    index = int(device)
    if not 0 <= index < device_count():
        raise CUDAError(INVALID_DEVICE)
    return index


def _missing(module: str, name: str) -> AttributeError:
    return AttributeError(f"module {module!r} has no attribute {name!r} "
                          "(not forwarded to gpu-workbench's remote GPU yet)")


class ForwardingModule(types.ModuleType):
    """A module whose missing names say that they are not forwarded (not a bare miss)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _missing(self.__name__, name)


# ---------------------------------------------------------------- per-thread state
# (this thread's current device and stream: kernelproxy.state.current)

def get_device_id() -> int:
    """``cupy.cuda.get_device_id``: the current device (0: the session's device)."""
    return current.device


# ---------------------------------------------------------------- runtime and driver

class _RuntimeModule(ForwardingModule):
    """``cupy.cuda.runtime`` (also ``cupy_backends.cuda.api.runtime``)."""

    @property
    def is_hip(self) -> bool:
        return bool(_facts().get("is_hip", False))

    def __getattr__(self, name: str) -> Any:
        # the cudaDevAttr* constants: CUDA's numbering, as the pool's CuPy names it
        code = (_facts().get("attribute_codes") or {}).get(name) \
            if name.startswith("cudaDevAttr") else None
        if code is None:
            return super().__getattr__(name)
        return code


def _properties(device: int) -> dict:
    props = _facts(device).get("properties") or {}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in props.items()}


def memGetInfo() -> tuple[int, int]:
    """``(free, total)`` bytes as this session may use them: its memory limit is its total."""
    figures = _pool_figures()
    total = figures.get("limit") or int(_properties(current.device).get("totalGlobalMem") or 0)
    return max(0, total - int(figures["total_bytes"])), total


def _device_get_attribute(attrib: int, device: int) -> int:
    """``runtime.deviceGetAttribute``: the value the pool's CUDA gave for the session's
    device when the session began (``Device.attributes``, named as CuPy names them: the
    ``cudaDevAttr`` name less its prefix; attributes are fixed for a device's lifetime)."""
    facts = _facts(device)
    attributes = facts.get("attributes") or {}
    for name, code in (facts.get("attribute_codes") or {}).items():
        value = attributes.get(name.removeprefix("cudaDevAttr"))
        if code == int(attrib) and value is not None:
            return int(value)
    raise CUDAError("cudaErrorInvalidValue: invalid argument")


def _can_access_peer(device: int, peer: int) -> int:
    """0: each of a client's devices is a session of its own, a separate process (arrays
    move between them through the client, kernelproxy.device_group), and CUDA answers 0
    for a device and itself."""
    _checked(device)
    _checked(peer)
    return 0


def _device_synchronize() -> None:
    """``runtime.deviceSynchronize``: refused while the device captures (kernelproxy.graphs)."""
    graphs.check_device_sync(current.device)
    _session().sync(device=True)


def _build_runtime(name: str) -> types.ModuleType:
    rt = _RuntimeModule(name)
    rt.__dict__.update(
        CUDARuntimeError=CUDAError,
        getDeviceCount=device_count,
        getDevice=get_device_id,
        setDevice=lambda device: setattr(current, "device", _checked(device)),
        getDeviceProperties=_properties,
        runtimeGetVersion=lambda: int(_facts().get("runtime_version", 0)),
        driverGetVersion=lambda: int(_facts().get("driver_version", 0)),
        memGetInfo=memGetInfo,
        deviceSynchronize=_device_synchronize,
        streamIsCapturing=graphs.stream_is_capturing,
        # CUDA's capture modes and statuses, and the debug flag CuPy's tests use
        streamCaptureModeGlobal=0, streamCaptureModeThreadLocal=1, streamCaptureModeRelaxed=2,
        streamCaptureStatusNone=0, streamCaptureStatusActive=1,
        streamCaptureStatusInvalidated=2, cudaGraphDebugDotFlagsVerbose=1,
        deviceCanAccessPeer=_can_access_peer,
        deviceGetAttribute=_device_get_attribute,
    )
    return rt


class _DriverModule(_RuntimeModule):
    """``cupy.cuda.driver`` (also ``cupy_backends.cuda.api.driver``)."""


def _build_driver(name: str) -> types.ModuleType:
    drv = _DriverModule(name)
    drv.__dict__.update(
        CUDADriverError=CUDAError,
        get_build_version=lambda: int(_facts().get("build_version", 0)),
        driverGetVersion=lambda: int(_facts().get("driver_version", 0)),
    )
    return drv


# ---------------------------------------------------------------- Device

class Device:
    """``cupy.cuda.Device``: the session's device (0); others raise as CUDA does."""

    def __init__(self, device: Any = None) -> None:
        self.id = current.device if device is None else int(device)
        self._before: list[int] = []

    def use(self) -> None:
        current.device = _checked(self.id)

    def __enter__(self) -> "Device":
        index = _checked(self.id)
        self._before.append(current.device)
        current.device = index
        return self

    def __exit__(self, *exc: Any) -> None:
        current.device = self._before.pop()

    def synchronize(self) -> None:
        graphs.check_device_sync(_checked(self.id))
        _device_session(self.id).sync(device=True)

    @property
    def compute_capability(self) -> str:
        props = _properties(self.id)
        return f"{props.get('major', 0)}{props.get('minor', 0)}"

    @property
    def attributes(self) -> dict:
        return dict(_facts(self.id).get("attributes") or {})

    @property
    def mem_info(self) -> tuple[int, int]:
        with Device(self.id):
            return memGetInfo()

    @property
    def pci_bus_id(self) -> str:
        return str(_facts(self.id).get("pci_bus_id", ""))

    def __int__(self) -> int:
        return self.id

    __index__ = __int__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cupy.cuda.Device", self.id))

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"'Device' object has no attribute {name!r} "
                             "(not forwarded to gpu-workbench's remote GPU yet)")


# ---------------------------------------------------------------- streams and events

_stream_ids = itertools.count(0x100)


class Stream:
    """``cupy.cuda.Stream``: a name for work that runs, in issue order, on the session's
    stream (see the module's docstring). ``ptr`` is an id, not a device pointer."""

    null: "Stream"
    ptds: "Stream"

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority: int | None = None) -> None:
        if null and ptds:
            raise ValueError("null and ptds cannot both be True")
        self.ptr = 0 if null else 2 if ptds else next(_stream_ids)
        self.device_id = current.device
        self.non_blocking = bool(non_blocking)
        self.priority = 0 if priority is None else int(priority)
        self._before: list = []

    def use(self) -> "Stream":
        current.stream = self
        graphs.stream_changed()   # (while a capture is in progress: captured or not)
        return self

    def __enter__(self) -> "Stream":
        self._before.append(current.stream)
        current.stream = self
        graphs.stream_changed()
        return self

    def __exit__(self, *exc: Any) -> None:
        current.stream = self._before.pop()
        graphs.stream_changed()

    def synchronize(self) -> None:
        graphs.check_stream_sync(self)   # (a capturing stream: CUDA refuses)
        (_session() if self.ptr in (0, 2) else _device_session(self.device_id)).sync(device=True)

    @property
    def done(self) -> bool:
        """Whether the stream's work has finished: waits for it, then says True (a
        capturing stream's query fails: False, as CuPy returns it)."""
        captured = graphs.stream_done(self)
        if captured is not None:
            return captured
        self.synchronize()
        return True

    def record(self, event: "Event | None" = None) -> "Event":
        if event is None:
            event = Event()
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        """Nothing to wait for: the event's work is ahead of this stream's in issue order.
        (During a capture, waiting on an event of the capture joins it: kernelproxy.graphs.)"""
        if not isinstance(event, Event):
            raise TypeError("wait_event needs a cupy.cuda.Event")
        graphs.event_waited(self, event)

    def add_callback(self, callback: Any, arg: Any) -> None:
        """Calls ``callback(stream, status, arg)`` once the work issued so far is done
        (here, on the client, after waiting for it)."""
        graphs.check_add_callback(self)
        self.synchronize()
        callback(self, 0, arg)

    def launch_host_func(self, callback: Any, arg: Any) -> None:
        """Calls ``callback(arg)`` once the work issued so far is done; on a capturing
        stream, once each launch of the graph is."""
        if graphs.captured_host_func(self, callback, arg):
            return
        self.synchronize()
        callback(arg)

    def is_capturing(self) -> bool:
        """Whether this stream captures (began a capture, or joined one): kernelproxy.graphs."""
        return graphs.is_capturing(self)

    def begin_capture(self, mode: Any = None) -> None:
        """Begin capturing this stream's work into a CUDA graph in the pool (CuPy's relaxed
        mode by default). While the capture lasts each op waits for its reply, so that what
        CuPy refuses during capture is raised at its own line."""
        graphs.begin_capture(self, mode)

    def end_capture(self) -> "graphs.Graph":
        """End the capture: a ``cupy.cuda.Graph`` kept in the pool."""
        return graphs.end_capture(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return hash(("cupy.cuda.Stream", self.ptr))

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (device {self.device_id})>"


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


def get_current_stream(device_id: int | None = None) -> Stream:
    """``cupy.cuda.get_current_stream``: the stream made current in this thread, else null."""
    if device_id is not None:
        _checked(device_id)
    return current.stream if current.stream is not None else Stream.null


class Event(RemoteObject):
    """``cupy.cuda.Event``: a CUDA event of the session's worker, recorded in op order
    (made and used by CUDA calls; dropped in the worker as any remote object is)."""

    #: the capture it was last recorded in, if any (kernelproxy.graphs), and on what stream
    _capture: Any = None
    _recorded_on: Any = None

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("interprocess events are not available on gpu-workbench's "
                                      "remote GPU (the event lives in the pool's process)")
        session = _session()
        self.block, self.disable_timing, self.interprocess = bool(block), bool(disable_timing), False
        self._s = session
        self._h = session.new_id()
        session.submit(m.KIND_CUDA, api.NONE, None, "event.new", self._h, [self.disable_timing],
                       label="cupy.cuda.Event")

    @property
    def ptr(self) -> int:
        """An id of the event in the session (not a CUDA handle)."""
        return self._h

    def record(self, stream: Stream | None = None) -> None:
        graphs.event_recorded(self, stream if stream is not None else get_current_stream())
        self._s.submit(m.KIND_CUDA, api.NONE, None, "event.record", self._h,
                       label="cupy.cuda.Event.record")

    def synchronize(self) -> None:
        graphs.check_event_query(self)   # (an event of a capture: CUDA refuses)
        self._s.submit(m.KIND_CUDA, api.NONE, None, "event.synchronize", self._h,
                       label="cupy.cuda.Event.synchronize")
        self._s.sync()

    @property
    def done(self) -> bool:
        captured = graphs.event_done(self)
        if captured is not None:
            return captured
        session = self._s
        return bool(session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "event.done",
                                                 self._h, label="cupy.cuda.Event.done")))

    def __repr__(self) -> str:
        return f"<cupy.cuda.Event {self._h} (remote)>"


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """``cupy.cuda.get_elapsed_time``: milliseconds of the device's time between events."""
    if not isinstance(start_event, Event) or not isinstance(end_event, Event):
        raise TypeError("get_elapsed_time needs two cupy.cuda.Event objects")
    if start_event._s is not end_event._s:
        raise ValueError("the events belong to different remote sessions")
    graphs.check_event_query(start_event)
    graphs.check_event_query(end_event)
    session = start_event._s
    return float(session.value(session.submit(
        m.KIND_CUDA, api.VALUE, None, "event.elapsed", None, [start_event._h, end_event._h],
        label="cupy.cuda.get_elapsed_time")))


# ---------------------------------------------------------------- memory pools

def _pool_figures() -> dict:
    session = _session()
    return session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "pool.figures",
                                        label="cupy memory pool"))


class MemoryPool:
    """``cupy.cuda.MemoryPool``: the session's device memory pool on the worker (one pool
    per session; its limit starts at the session's memory limit)."""

    def __init__(self, allocator: Any = None) -> None:
        if allocator is not None:
            raise NotImplementedError("a memory pool with its own allocator is not forwarded "
                                      "to gpu-workbench's remote GPU yet")

    def used_bytes(self) -> int:
        return int(_pool_figures()["used_bytes"])

    def total_bytes(self) -> int:
        return int(_pool_figures()["total_bytes"])

    def free_bytes(self) -> int:
        figures = _pool_figures()
        return int(figures["total_bytes"]) - int(figures["used_bytes"])

    def n_free_blocks(self) -> int:
        return int(_pool_figures()["n_free_blocks"])

    def free_all_blocks(self, stream: Any = None) -> None:
        _session().submit(m.KIND_CUDA, api.NONE, None, "pool.free_all_blocks",
                          label="MemoryPool.free_all_blocks")

    free_all_free = free_all_blocks

    def set_limit(self, size: int | None = None, fraction: float | None = None) -> None:
        """At most *size* bytes, or *fraction* of the device's memory; never more than the
        session's own limit (0 or None: back to that limit)."""
        if size is not None and fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if fraction is not None:
            if not 0 <= fraction <= 1:
                raise ValueError(f"memory limit fraction out of range: {fraction}")
            size = int(int(_properties(current.device).get("totalGlobalMem") or 0) * fraction)
        if size is not None and int(size) < 0:
            raise ValueError(f"memory limit size out of range: {size}")
        _session().submit(m.KIND_CUDA, api.NONE, None, "pool.set_limit", None,
                          [None if size is None else int(size)], label="MemoryPool.set_limit")

    def get_limit(self) -> int:
        return int(_pool_figures().get("limit") or 0)

    def malloc(self, size: int) -> Any:
        """*size* bytes of the session's memory on the pool's device (see cupy.cuda.alloc)."""
        return remote_memory.alloc(size)


class PinnedMemoryPool:
    """``cupy.cuda.PinnedMemoryPool``: page-locked host memory serves transfers on a GPU's
    own host; the client has no GPU, so this pool hands out ordinary host memory."""

    def __init__(self, allocator: Any = None) -> None:
        pass

    def malloc(self, size: int) -> memoryview:
        return memoryview(bytearray(int(size)))

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass

    def set_limit(self, size: int | None = None, fraction: float | None = None) -> None:
        pass

    def get_limit(self) -> int:
        return 0


_default_pool = MemoryPool()
_default_pinned_pool = PinnedMemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _default_pool


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    return _default_pinned_pool


def alloc_pinned_memory(size: int) -> memoryview:
    """Host memory for staging data (ordinary memory on the client: see PinnedMemoryPool)."""
    return _default_pinned_pool.malloc(size)


def set_allocator(allocator: Any = None) -> None:
    raise NotImplementedError("cupy.cuda.set_allocator is not forwarded to gpu-workbench's "
                              "remote GPU: the session's pool allocates on the worker")


def set_pinned_memory_allocator(allocator: Any = None) -> None:
    """Accepted: the client's host memory is never pinned (see PinnedMemoryPool)."""


# ---------------------------------------------------------------- the modules

def build_cuda_modules() -> dict[str, types.ModuleType]:
    """``cupy.cuda`` and its submodules, and ``cupy_backends.cuda.api`` beside them."""
    runtime = _build_runtime("cupy_backends.cuda.api.runtime")
    driver = _build_driver("cupy_backends.cuda.api.driver")
    memory = ForwardingModule("cupy.cuda.memory")
    memory.__dict__.update(OutOfMemoryError=OutOfMemoryError, MemoryPool=MemoryPool,
                           set_allocator=set_allocator, Memory=remote_memory.Memory,
                           MemoryPointer=remote_memory.MemoryPointer, alloc=remote_memory.alloc)
    pinned = ForwardingModule("cupy.cuda.pinned_memory")
    pinned.__dict__.update(PinnedMemoryPool=PinnedMemoryPool, alloc_pinned_memory=alloc_pinned_memory,
                           set_pinned_memory_allocator=set_pinned_memory_allocator)
    device = ForwardingModule("cupy.cuda.device")
    device.__dict__.update(Device=Device, get_device_id=get_device_id,
                           get_compute_capability=lambda: Device().compute_capability)
    graph = ForwardingModule("cupy.cuda.graph")
    graph.__dict__.update(Graph=graphs.Graph)
    stream = ForwardingModule("cupy.cuda.stream")
    stream.__dict__.update(Stream=Stream, Event=Event, get_current_stream=get_current_stream,
                           get_elapsed_time=get_elapsed_time)
    # CUB and cuTENSOR run in the pool, chosen by the pool: nothing of them is the client's
    # the pool compiles kernels (NVRTC, in the session's process): code that imports the
    # module finds it; what it names says it is not forwarded
    compiler = ForwardingModule("cupy.cuda.compiler")
    cub = ForwardingModule("cupy.cuda.cub")
    cutensor = ForwardingModule("cupy.cuda.cutensor")
    cub.available = cutensor.available = False
    cuda = ForwardingModule("cupy.cuda")
    cuda.__dict__.update(
        __path__=[], __package__="cupy.cuda",
        runtime=runtime, driver=driver, memory=memory, pinned_memory=pinned, device=device,
        stream=stream, cub=cub, cutensor=cutensor, compiler=compiler, graph=graph,
        Device=Device, Stream=Stream, Event=Event, Graph=graphs.Graph,
        get_current_stream=get_current_stream,
        get_elapsed_time=get_elapsed_time, get_device_id=get_device_id,
        MemoryPool=MemoryPool, PinnedMemoryPool=PinnedMemoryPool,
        Memory=remote_memory.Memory, MemoryPointer=remote_memory.MemoryPointer,
        alloc=remote_memory.alloc, alloc_pinned_memory=alloc_pinned_memory, set_allocator=set_allocator,
        set_pinned_memory_allocator=set_pinned_memory_allocator,
        is_available=lambda: True,
        # paths of this machine's CUDA toolkit, as CuPy finds them: none on a client (kernels
        # are compiled in the pool, by NVRTC); CuPy answers None where nothing is found
        get_cuda_path=lambda: None, get_nvcc_path=lambda: None,
        get_local_runtime_version=lambda: int(_facts().get("runtime_version", 0)),
    )
    backends = types.ModuleType("cupy_backends")
    backends_cuda = types.ModuleType("cupy_backends.cuda")
    backends_api = types.ModuleType("cupy_backends.cuda.api")
    for module in (backends, backends_cuda, backends_api):
        module.__path__ = []
    # the stream ids as CuPy's low-level module gives them: the client's default stream is
    # the null stream (0); per-thread default streams are not the client's to switch on
    backends_stream = ForwardingModule("cupy_backends.cuda.stream")
    backends_stream.__dict__.update(
        is_ptds_enabled=lambda: False, get_default_stream_ptr=lambda: 0,
        get_current_stream_ptr=lambda: get_current_stream().ptr)
    backends.cuda, backends_cuda.api, backends_cuda.stream = backends_cuda, backends_api, backends_stream
    backends_api.runtime, backends_api.driver = runtime, driver
    return {
        "cupy.cuda": cuda, "cupy.cuda.runtime": runtime, "cupy.cuda.driver": driver,
        "cupy.cuda.memory": memory, "cupy.cuda.pinned_memory": pinned,
        "cupy.cuda.device": device, "cupy.cuda.stream": stream, "cupy.cuda.cub": cub,
        "cupy.cuda.graph": graph,
        "cupy.cuda.compiler": compiler,
        "cupy.cuda.cutensor": cutensor,
        "cupy_backends": backends, "cupy_backends.cuda": backends_cuda,
        "cupy_backends.cuda.api": backends_api, "cupy_backends.cuda.stream": backends_stream,
        "cupy_backends.cuda.api.runtime": runtime, "cupy_backends.cuda.api.driver": driver,
    }
