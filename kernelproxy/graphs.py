"""CuPy's graph API through the pool: ``Stream.begin_capture``, ``end_capture``,
``is_capturing`` and ``cupy.cuda.Graph`` (docs/architecture.md, "CuPy's graph API").

A capture is the worker's (worker/user_graphs.py): on a GPU, CuPy's own on a stream of the
worker's; on the NumPy device, recorded calls. What a capture means in terms of the
client's streams is kept here, since streams are the client's names (every op of a
session runs on the worker's one stream): which streams capture (the one that began, and
those that joined it by waiting on an event recorded in it), whether the capture was
invalidated by something CUDA forbids during capture (synchronizing a capturing stream or
the device, querying it, ending it on a stream that did not begin it), which forked
streams have not joined back. So ``is_capturing`` answers from here, and these errors are
raised here, at the line that makes them, with CUDA's words. Errors CuPy raises for an op
(cuBLAS during capture, a read of device data) are the worker's, raised at the op's line
too: while a capture is in progress the session runs *blocking* (each op waits for its
reply). A capture is a one-time cost; a launch is one op, sent without waiting.

The worker must know whether the ops that follow are captured: they are while the
capturing thread's current stream is a capturing one (``with s:`` around the body, as
CuPy's examples write it); a stream made current that is not capturing (``with s3:``)
runs them for real, as CuPy would. ``kernelproxy.cuda``'s streams tell this module when
the current stream changes (:func:`stream_changed`), and a ``graph.route`` call tells the
worker. Ops of another thread of the program issued during a capture are captured with
the capturing thread's (the worker cannot tell threads apart): the session would need a
look at each op to do better (see docs/architecture.md).

Stretch replay leaves graphs alone: no stretch is kept while a capture is in progress
(the session's stretch replay is set aside for the capture, its first stretch after it
spoiled), and a stretch holding a launch is never held (spoiled before the launch joins it).
"""

from __future__ import annotations

import operator
import threading
import weakref
from typing import Any

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import CUDAError

from .remote_object import RemoteObject
from .state import current, primary_session

__all__ = ["Graph", "begin_capture", "end_capture", "abandon_capture", "is_capturing",
           "stream_is_capturing",
           "stream_changed", "check_stream_sync", "stream_done", "check_device_sync",
           "event_recorded", "event_waited", "check_event_query", "event_done",
           "captured_host_func", "check_add_callback"]

# CUDA's errors, as cudaGetErrorName and cudaGetErrorString give them (CuPy's
# CUDARuntimeError says "name: text")
ILLEGAL_STATE = "cudaErrorIllegalState: the operation cannot be performed in the present state"
UNSUPPORTED = "cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing"
INVALIDATED = ("cudaErrorStreamCaptureInvalidated: operation failed due to a previous error "
               "during capture")
UNMATCHED = "cudaErrorStreamCaptureUnmatched: capture was not initiated in this stream"
UNJOINED = "cudaErrorStreamCaptureUnjoined: capturing stream has unjoined work"
IMPLICIT = ("cudaErrorStreamCaptureImplicit: operation would make the legacy stream depend on "
            "a capturing blocking stream")
CAPTURED_EVENT = ("cudaErrorCapturedEvent: operation not permitted on an event last recorded "
                  "in a capturing stream")
#: CuPy's own words (cupy/cuda/stream.pyx, cupy_backends/cuda/api/runtime.pyx)
LEGACY = "cannot capture on the default (legacy) stream"
INVALIDATED_QUERY = ("the stream was capturing, but an error has invalidated the capture "
                     "sequence")


class _Capture:
    """One capture in progress in a session, as the client's streams see it."""

    __slots__ = ("session", "device", "origin", "blocking", "streams", "unjoined", "thread",
                 "routed", "invalid", "host_funcs", "saved", "__weakref__")

    def __init__(self, session: Any, stream: Any) -> None:
        self.session = session
        self.device = stream.device_id
        self.origin = stream.ptr
        #: began on a blocking stream: the legacy stream then may not be synchronized
        self.blocking = not stream.non_blocking
        self.streams = {stream.ptr}   # the origin and the streams that joined it
        self.unjoined: set[int] = set()
        self.thread = threading.get_ident()
        self.routed = False           # what the worker was last told
        self.invalid = False          # invalidated: its end raises
        self.host_funcs: list = []    # launch_host_func's (callback, arg), in order
        self.saved: tuple = ()        # the session's blocking and stretch replay, set aside

    def invalidate(self) -> None:
        self.invalid = True


#: the capture in progress in each session (one at a time)
_captures: "weakref.WeakKeyDictionary[Any, _Capture]" = weakref.WeakKeyDictionary()


def _session_of(device: int) -> Any:
    """The session of the client's device *device*."""
    primary = primary_session()
    return primary if primary.group is None else primary.group[device]


def _capture_of(stream: Any) -> _Capture | None:
    """The capture in progress on *stream*'s device, if any."""
    if not _captures:
        return None
    try:
        return _captures.get(_session_of(stream.device_id))
    except Exception:   # no session active, or a device it no longer holds: nothing captures
        return None


def _wants_route(capture: _Capture) -> bool:
    """Whether the capturing thread's current stream is capturing."""
    stream = current.stream
    if stream is None:
        return False   # (the null stream never captures)
    return stream.ptr in capture.streams and stream.device_id == capture.device


def _set_aside(session: Any) -> tuple:
    """For a capture: the session blocks (an op's error at its line) and keeps no stretch."""
    session.leave_templates()   # (a run answered from a template goes as its ops first)
    saved = (session.blocking, session.stretches)
    session.stretches = None
    session.blocking = True
    return saved


def _restore(session: Any, saved: tuple) -> None:
    session.blocking, stretches = saved
    session.stretches = stretches
    if stretches is not None:
        stretches.spoil()   # (its key missed the capture's ops and its time the capture's)


# ---------------------------------------------------------------- begin and end

def begin_capture(stream: Any, mode: Any = None) -> None:
    """``Stream.begin_capture(mode)``: the worker begins capturing (CuPy's relaxed mode
    by default; the others as CUDA has them)."""
    __tracebackhide__ = True  # IPython shows the user's frames, not ours
    if stream.ptr in (0, 1):
        raise RuntimeError(LEGACY)
    if mode is not None:
        mode = operator.index(mode)   # (CuPy's ``int mode``: a TypeError otherwise)
    session = _session_of(stream.device_id)
    capture = _captures.get(session)
    if capture is not None:
        if stream.ptr in capture.streams:
            raise CUDAError(ILLEGAL_STATE)
        raise NotImplementedError(
            "gpu-workbench captures one stream at a time on a device: end the capture in "
            f"progress (stream {capture.origin}) first")
    with session._lock:
        session.sync()   # (the ops before the capture are not part of it)
        capture = _Capture(session, stream)
        capture.routed = _wants_route(capture)
        capture.saved = _set_aside(session)
        try:
            session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "graph.begin", None,
                                         [mode, capture.routed],
                                         label="cupy.cuda.Stream.begin_capture"))
        except BaseException:
            _restore(session, capture.saved)
            raise
        _captures[session] = capture


def end_capture(stream: Any) -> "Graph":
    """``Stream.end_capture()``: the graph, or CUDA's error (the capture ends either way)."""
    __tracebackhide__ = True  # IPython shows the user's frames, not ours
    capture = _capture_of(stream)
    if capture is None or stream.ptr not in capture.streams:
        raise CUDAError(ILLEGAL_STATE)
    if stream.ptr != capture.origin:   # (a stream that joined: the capture is spoiled)
        capture.invalidate()
        raise CUDAError(UNMATCHED)
    error = INVALIDATED if capture.invalid else UNJOINED if capture.unjoined else None
    session = capture.session
    hid = session.new_id() if error is None else None
    _end(session, capture, hid, "cupy.cuda.Stream.end_capture")
    if error is not None:
        raise CUDAError(error)
    graph = Graph._of(session, hid)
    graph._host_funcs = tuple(capture.host_funcs)
    return graph


def abandon_capture(session: Any) -> bool:
    """End the capture in progress in *session*, if any, keeping no graph (code that failed
    half-way through a capture, a test's clean-up): whether there was one. The session then
    runs as before the capture."""
    capture = _captures.get(session)
    if capture is None:
        return False
    _end(session, capture, None, "kernelproxy.graphs.abandon_capture")
    return True


def _end(session: Any, capture: Any, hid: int | None, label: str) -> None:
    """The pool's capture ends (its graph kept as *hid*, or none); the session runs as
    before the capture whatever the pool answered."""
    with session._lock:
        try:
            session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "graph.end", hid, [],
                                         label=label))
        finally:
            _captures.pop(session, None)
            _restore(session, capture.saved)


def is_capturing(stream: Any) -> bool:
    """``Stream.is_capturing()``, from what this client began and has not ended."""
    capture = _capture_of(stream)
    return capture is not None and _captures_stream(capture, stream.ptr)


def _captures_stream(capture: Any, ptr: int) -> bool:
    """Whether *capture* records work issued on stream *ptr* (CuPy's errors where CUDA
    refuses the question: the legacy stream during a global capture, an invalidated one)."""
    if ptr == 0:
        if capture.blocking:
            raise CUDAError(IMPLICIT)
        return False
    if ptr in capture.streams:
        if capture.invalid:
            raise RuntimeError(INVALIDATED_QUERY)
        return True
    return False


def stream_is_capturing(ptr: Any) -> bool:
    """``cupy.cuda.runtime.streamIsCapturing(ptr)``, for the client's stream ids."""
    ptr = operator.index(ptr)
    for capture in list(_captures.values()):
        if capture.device != current.device:
            continue
        if ptr == 0:
            return _captures_stream(capture, ptr)
        if _captures_stream(capture, ptr):
            return True
    return False


# ---------------------------------------------------------------- which ops are captured

def stream_changed() -> None:
    """The current stream of this thread changed: the worker captures the ops that follow
    if it is a capturing stream, and runs them otherwise."""
    if not _captures:
        return
    me = threading.get_ident()
    for session, capture in list(_captures.items()):
        if session.closed:   # (closed during the capture: it ended with the worker)
            _captures.pop(session, None)
            continue
        if capture.thread != me:
            continue
        wanted = _wants_route(capture)
        if wanted != capture.routed:
            capture.routed = wanted
            session.submit(m.KIND_CUDA, api.NONE, None, "graph.route", None, [wanted],
                           label="cupy.cuda.Stream")


# ---------------------------------------------------------------- what capture forbids

def check_stream_sync(stream: Any) -> None:
    """``Stream.synchronize()`` of a capturing stream (or of the legacy stream while a
    blocking one captures): CUDA refuses it and invalidates the capture."""
    capture = _capture_of(stream)
    if capture is None:
        return
    if stream.ptr in capture.streams:
        capture.invalidate()
        raise CUDAError(UNSUPPORTED)
    if stream.ptr == 0 and capture.blocking:
        capture.invalidate()
        raise CUDAError(IMPLICIT)


def stream_done(stream: Any) -> bool | None:
    """``Stream.done`` of a capturing stream: False, and the capture is invalidated (CuPy
    returns the failed query's status); None: not capturing, ask the worker."""
    capture = _capture_of(stream)
    if capture is None:
        return None
    if stream.ptr in capture.streams or (stream.ptr == 0 and capture.blocking):
        capture.invalidate()
        return False
    return None


def check_device_sync(device: int) -> None:
    """Synchronizing the device while one of its streams captures: refused, and the
    capture invalidated (CUDA forbids synchronizing a handle that holds a capture)."""
    if not _captures:
        return
    try:
        capture = _captures.get(_session_of(device))
    except Exception:
        return
    if capture is not None:
        capture.invalidate()
        raise CUDAError(UNSUPPORTED)


def captured_host_func(stream: Any, callback: Any, arg: Any) -> bool:
    """``launch_host_func`` on a capturing stream: kept with the graph, called once each
    launch's work is done (True); False: not capturing."""
    capture = _capture_of(stream)
    if capture is None or stream.ptr not in capture.streams:
        return False
    capture.host_funcs.append((callback, arg))
    return True


def check_add_callback(stream: Any) -> None:
    """``add_callback`` does not support capture (CuPy's words): CUDA refuses it."""
    capture = _capture_of(stream)
    if capture is not None and stream.ptr in capture.streams:
        capture.invalidate()
        raise CUDAError(UNSUPPORTED)


# ---------------------------------------------------------------- events

def event_recorded(event: Any, stream: Any) -> None:
    """*event* recorded on *stream*: captured if the stream captures (the capture's fork
    and join points), else an ordinary record."""
    capture = _capture_of(stream)
    if capture is not None and stream.ptr in capture.streams:
        event._capture, event._recorded_on = weakref.ref(capture), stream.ptr
    else:
        event._capture, event._recorded_on = None, stream.ptr


def _captured_in(event: Any) -> _Capture | None | bool:
    """The capture *event* was last recorded in: the capture (in progress), True (ended),
    None (recorded outside any capture)."""
    ref = getattr(event, "_capture", None)
    if ref is None:
        return None
    capture = ref()
    if capture is None or _captures.get(capture.session) is not capture:
        return True
    return capture


def event_waited(stream: Any, event: Any) -> None:
    """``stream.wait_event(event)``: a stream that waits on an event of a capture joins it
    (CUDA's fork); the capturing stream waiting on a joined stream's event joins that
    stream back. (Waiting on an event recorded outside the capture orders nothing here:
    every op runs in issue order on the worker's one stream.)"""
    capture = _captured_in(event)
    if not isinstance(capture, _Capture) or stream.device_id != capture.device:
        return
    if stream.ptr in capture.streams:
        if stream.ptr == capture.origin:
            capture.unjoined.discard(event._recorded_on)
        return
    if stream.ptr in (0, 1):
        return
    capture.streams.add(stream.ptr)
    capture.unjoined.add(stream.ptr)
    stream_changed()   # (it may be the current stream)


def check_event_query(event: Any) -> None:
    """``Event.synchronize`` and ``get_elapsed_time`` of an event last recorded in a
    capture: CUDA refuses them (a capture in progress is invalidated)."""
    capture = _captured_in(event)
    if capture is None:
        return
    if isinstance(capture, _Capture):
        capture.invalidate()
    raise CUDAError(CAPTURED_EVENT)


def event_done(event: Any) -> bool | None:
    """``Event.done`` of an event last recorded in a capture: False (the failed query's
    status, as CuPy returns it); None: an ordinary event, ask the worker."""
    capture = _captured_in(event)
    if capture is None:
        return None
    if isinstance(capture, _Capture):
        capture.invalidate()
    return False


# ---------------------------------------------------------------- the graph

class Graph(RemoteObject):
    """``cupy.cuda.Graph``: a graph captured in the session's worker, launched there by one
    op; dropped there when this object is, its memory with it."""

    _remote_class = "cuda.Graph"
    #: launch_host_func's (callback, arg) of the capture, called after each launch
    _host_funcs: tuple = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "currently this class cannot be initiated by the user and must be created via "
            "stream capture")

    def _call_graph(self, name: str, stream: Any) -> None:
        if stream is not None:
            stream.ptr   # noqa: B018  (CuPy's: a stream, or an AttributeError)
        session = self._s
        with session._lock:
            stretches = session.stretches
            if stretches is not None:   # a stretch with a launch is never held
                stretches.spoil()
            session.submit(m.KIND_CUDA, api.NONE, None, name, self._h,
                           label=f"cupy.cuda.Graph.{name.partition('.')[2]}")

    def launch(self, stream: Any = None) -> None:
        """Launch the graph (on the session's stream: see kernelproxy.cuda): one op, not
        waited for. Host functions captured with it run once its work is done."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._call_graph("graph.launch", stream)
        if self._host_funcs:
            self._s.sync(device=True)
            for callback, arg in self._host_funcs:
                callback(arg)

    def upload(self, stream: Any = None) -> None:
        """Upload the graph to the device ahead of its first launch."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._call_graph("graph.upload", stream)

    def debug_dot_str(self, flags: int = 0) -> str:
        raise NotImplementedError(
            "cupy.cuda.Graph.debug_dot_str is not available through gpu-workbench: the graph "
            "lives in the pool's worker, where CUDA writes its DOT text to a file")

    def __repr__(self) -> str:
        return f"<cupy.cuda.Graph {self._h} (remote)>"
