"""A session: ops batched and pipelined to one remote worker.

Every array-returning op is *asynchronous*: the session names the result
itself (a fresh positive handle id), appends the op to the outgoing batch and
returns at once. A batch is sent when the caller needs an answer (a value,
metadata not yet known, an explicit sync) or when it grows large; replies to
batches sent early are read lazily. The first error of an asynchronous op is
raised at the next sync point, with a note naming the op and the line of user
code that issued it; ops issued after it never run, and arrays they would
have made raise a clear error when used.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import threading
import time
import weakref
from collections import deque
from typing import Any, Callable

import msgpack
import numpy as np
import zmq

from gpu_backend.protocol import api, codec
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import InvalidHandleError, SessionLostError, error_class
from gpu_backend.protocol.spinning import pause_for
from gpu_backend.protocol.staging import StagingRing
from gpu_backend.protocol.staging import available as staging_available
from gpu_backend.protocol.curve import resolve_server_key

from .array_meta import ArrayMetadata
from .caller import caller
from .connection import (Heartbeat, door_request, hello, process_context, session_label,
                         signed_in_request)
from .device_group import device_mismatch, open_devices
from .streamed import send_streamed
from .interrupts import interrupts_deferred as _interrupts_deferred
from .lifetime import end_with_process
from .pushed_replies import PushedReplies
from .links import WorkerLink, open_link, worker_address
from .relink import LinkEnded, relink
from .session_replies import SessionReplies, mark_dead
from .session_templates import SessionTemplates
from .settings import SessionSettings
from .stretch_replay import StretchReplay
from . import early_replay
from .early_replay import Early
from .loop_cuts import DETECT_OPS, PIECES_AHEAD, LoopCuts
from .template_run import TemplateRun
from .tracebacks import for_user
from .trailing_downloads import TrailingDownloads, answers_value, host_value
from .wait_displays import WaitDisplays

__all__ = ["Session", "connect", "FLUSH_OPS"]

#: A batch is sent without waiting once it holds this many ops.
FLUSH_OPS = 512
#: Send the queued ops once there are EAGER_OPS of them and the worker has nothing of this
#: session's left to run, and gather the ops issued meanwhile into the next batch (sent
#: when that reply is in): the worker then runs while the client issues, as a GPU runs
#: while local CuPy launches, where holding every op to the sync point made a program's
#: step cost issuing plus running. A sync of a few ops (``float((x + 1).sum())``) stays
#: one batch; between two syncs the size that goes early doubles with each such batch
#: (8, 16, ... FLUSH_OPS), so a long stream of ops without a sync still travels in
#: large batches (each batch costs both processes a fixed few tens of microseconds).
#: ``GPUWB_EAGER_FLUSH=0`` holds them (SessionSettings.eager_flush).
EAGER_OPS = 8
#: After each early batch the size that goes early is multiplied by this (until a sync);
#: a session's ``eager_growth`` (1 keeps it at EAGER_OPS: tests compare the two).
EAGER_GROWTH = 2
#: How long close() waits for the worker to answer what was already sent.
CLOSE_WAIT = 5.0
#: How long a sync point polls without sleeping before it blocks. Local CuPy spins
#: through a whole synchronize (CUDA's default with more cores than GPUs); a thread that
#: sleeps takes tens of microseconds to wake (hundreds after idle, on some hosts), as
#: much as a small op's whole round trip. A millisecond covers a small op even on a
#: slow host, and after it the wait sleeps: a long op costs the client little CPU.
#: With few cores, spinning steals the CPU the worker needs, so it is off.
SPIN_SECONDS = 1e-3 if (os.cpu_count() or 1) >= 4 else 0.0
#: Host arrays at least this large travel as their own zero-copy frame.
INLINE_BYTES = 1 << 14
#: Uploads larger than this go through the same-host session's staging ring where it has
#: one (kernelproxy.streamed), however large the device's chunks: a frame of a few MiB
#: through the socket costs the kernel's copies both ways, while the ring's slot is written
#: once and read in place (an 8 MB upload and its first read: 6.9 ms by the socket against
#: 1.9 ms by the ring on the 2-core VM's NumPy device). Smaller ones stay frames, where the
#: ring's hand-over costs as much as it saves.
STAGED_UPLOAD_BYTES = 1 << 18



def connect(address: str, token: str, *, server_key: str | bytes | os.PathLike | None = None,
            user: str | None = None, memory_limit: int | None = None,
            timeout: float = 150.0, devices: int = 1, label: str | None = None) -> "Session":
    """Open a session on the pool at *address* (``tcp://host:port``, or the pool's
    ``ipc://path`` from a client on the pool's host: the worker is then reached over
    ``ipc://`` too).

    *server_key* pins the pool's public key (Z85, or the path of its ``.pub``
    file): every connection to the pool is then encrypted (CurveZMQ) and a pool
    that cannot prove that key is refused with :class:`AuthenticationError`.
    None looks *address* up in the known-pools file (``$GPUWB_KNOWN_POOLS``,
    default ``~/.config/gpuwb/known_pools``); no entry means a plain connection,
    which a pool that requires encryption refuses.

    *devices* > 1 holds that many of the pool's devices, as ``cupy.cuda.Device(0)`` to
    ``Device(devices - 1)``: one session per device, each on a device of its own (see
    :mod:`kernelproxy.device_group`); the one returned is device 0's, and closing it closes
    them all. Each counts as a session against the user's quota.

    *label* says what opened the session, in the pool's status (the Lab panel shows it
    to the user beside the session's idle time); default: the notebook's path Jupyter
    gives its kernels (``JPY_SESSION_NAME``), else the script's name.
    """
    def open_session(apart_from: list[str] | None = None) -> Session:
        return Session(address, token, server_key=server_key, user=user,
                       memory_limit=memory_limit, timeout=timeout, apart_from=apart_from,
                       label=label)

    return open_devices(open_session, devices)



def _weakly(lose: Callable[[str], Any]) -> Callable[[str], Any]:
    """*lose* (a session's bound method) held weakly: the session's link holds it, and the
    session's finaliser holds the link, which must not keep the session alive."""
    method = weakref.WeakMethod(lose)

    def lost(reason: str) -> Any:
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        alive = method()
        if alive is not None:
            alive(reason)
        raise SessionLostError(reason)

    return lost


def _release(ctx: zmq.Context, link: WorkerLink, heartbeat: Heartbeat) -> None:
    """A session's resources, let go without waiting for anyone (its finaliser)."""
    heartbeat.stop()
    try:
        link.close()
    except Exception:   # already closed, or half made
        pass
    ctx.destroy(linger=0)


def _serialised(method):
    """Run *method* holding the session's lock: threads of one program share its session
    (CuPy may be called from any thread), and an op's encoding, the batch it joins and the
    replies read for it must not interleave with another thread's."""
    def locked(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        with self._lock:
            if self._late_frees:
                self._take_late_frees()
            return method(self, *args, **kwargs)

    locked.__name__, locked.__qualname__, locked.__doc__ = method.__name__, method.__qualname__, method.__doc__
    return locked


class Session(SessionTemplates, SessionReplies):
    """One client's session. Its public methods may be called from any thread; they take
    turns (one lock), as calls on one CUDA stream would."""

    #: the finaliser's work (a session that follows a move makes it anew: kernelproxy.relink)
    release_resources = staticmethod(_release)

    def __init__(self, address: str, token: str, *, server_key: str | bytes | os.PathLike | None = None,
                 user: str | None = None, memory_limit: int | None = None,
                 timeout: float = 150.0, apart_from: list[str] | None = None,
                 settings: SessionSettings | None = None, label: str | None = None) -> None:
        self.address = address
        #: what the environment asked of this session when it opened (kernelproxy.settings)
        self.settings = settings = settings or SessionSettings.from_environ()
        #: the sessions of one client that holds several devices, in device order (this one
        #: is ``group[ordinal]``), or None: the session is the client's one device
        self.group: list[Session] | None = None
        self.ordinal = 0
        self._lock = threading.RLock()
        #: arrays dropped while another thread held the lock (release), freed at the next
        #: serialised call: (handle, unread)
        self._late_frees: deque = deque()
        self._token = token
        #: the pool's pinned public key (Z85), or None: a plain connection
        self.server_key: bytes | None = resolve_server_key(address, server_key)
        self.ctx = zmq.Context()
        try:
            info = hello(self.ctx, address, token, user, memory_limit, timeout,
                         server_key=self.server_key, apart_from=apart_from,
                         label=session_label(label, settings.notebook))
        except BaseException:
            self.ctx.destroy(linger=0)
            raise
        self.id: str = info["session"]
        self.key: bytes = info["key"]
        self.device: dict = info.get("device") or {}
        #: wait for each op's reply before returning (``GPUWB_LAUNCH_BLOCKING=1``): an op's
        #: error is raised at the line that issued it, as CUDA_LAUNCH_BLOCKING=1 does for
        #: kernels, at the cost of a round trip per op (see docs/architecture.md)
        self.blocking: bool = settings.launch_blocking
        #: send ops as soon as the worker is idle (EAGER_OPS) rather than at sync points
        self.eager_flush: bool = settings.eager_flush
        self.eager_growth: int = EAGER_GROWTH
        #: cut a loop with no sync point into pieces that repeat (kernelproxy/loop_cuts.py;
        #: ``GPUWB_LOOP_CUTS``); only where ops go early (``eager_flush``)
        self.loop_cuts: bool = settings.loop_cuts
        #: how long a sync point polls before it sleeps (SPIN_SECONDS)
        self.spin_seconds: float = SPIN_SECONDS
        #: what the session's spinning waits call at each turn (protocol/spinning.py)
        self.spin_pause = pause_for(settings.spin_yield)
        self._eager_at = EAGER_OPS   # (the size that goes early now; doubles until a sync)
        #: queued records at which submit() next looks whether to send early: a count, not
        #: a multiple of EAGER_OPS, since free records (release) join the queue between ops
        self._eager_check = EAGER_OPS
        #: the device's properties, attributes and CUDA versions (``cupy.cuda.runtime``)
        self.runtime: dict = info.get("runtime") or {}
        #: the container (tuple or list) of each call of several results the pool answered,
        #: by (kind, name): from the second call on, such a call is not waited for
        #: (kernelproxy/result_structures.py)
        self.result_containers: dict = {}
        self.memory_limit: int = info["memory_limit"]
        self.lease_timeout: float = info["lease_timeout"]
        #: the worker's address (``unix://`` for a same-host client, else ``tcp://``) and the
        #: link to it, chosen by that address's scheme (kernelproxy.links)
        self.worker_address = worker_address(address, info)
        #: what the link calls when the worker's end has gone: the session follows a move
        #: or is lost (kernelproxy.relink)
        self._lost_callback = _weakly(self._link_ended)
        self.link = open_link(self.worker_address, ctx=self.ctx, key=self.key,
                              server_key=self.server_key, lost=self._lost_callback)
        #: how often the pool has moved this session to another worker, as far as it knows
        self.moves = 0
        self.heartbeat = Heartbeat(address, self.id, self.key, self.lease_timeout / 4,
                                   self.server_key, watch_worker=not self.link.tells_of_loss)
        self.heartbeat.start()
        #: closes the link and the context and stops the heartbeat, once: at close(), when
        #: the session is lost, or when a session never closed is collected (never blocks:
        #: a context left to the collector could wait for ever for a socket of its own)
        self._release = weakref.finalize(self, _release, self.ctx, self.link, self.heartbeat)
        _interrupts_deferred.install()
        self.closed = False
        #: why the pool ended this session, once it is lost (None: open, or closed by us)
        self.lost_reason: str | None = None
        #: uploads larger than this stream in chunks (GPU devices: the copy to the GPU then
        #: overlaps the network; the NumPy device keeps one zero-copy frame)
        self.stream_threshold: int | None = self.device.get("stream_bytes")
        self.stream_chunk_bytes: int = self.stream_threshold or m.STREAM_CHUNK_BYTES
        if self.stream_threshold and staging_available() and settings.staging:
            self.open_staging()
        #: a factory ``progress(label, total_bytes)`` of reporters (``update(done)``,
        #: ``close()``) for streamed transfers and for what a batch waits for before its ops
        #: run (its swap-in, room on the device: the worker's notices, sent only while this
        #: is set), or None; the kernel shows them in the notebook
        self.progress: Any = None
        #: the waits the worker told of, still open (kernelproxy/wait_displays.py)
        self._waits = WaitDisplays(lambda: self.progress)
        #: while True, each batch's device work is timed (CUDA events): ``device_seconds``
        #: adds it up (``%%gpu_time``); it costs a wait for the device per batch
        self.timing = False
        #: turns (filename, line) into words for error notes; the kernel says "line 3 of cell [5]"
        self.location_label: Callable[[str, int], str] | None = None
        self.device_seconds = 0.0
        #: time the worker spent on this session's batches (for overhead accounting)
        self.worker_seconds = 0.0
        self._packer = codec.make_packer(self._handle_of)
        self._free_packer = msgpack.Packer(autoreset=True)
        self._reply_hook = codec.ext_hook_for(None)
        self._ops: list[bytes] = []
        self._payload: list[Any] = []
        self._seq = 0
        self._flushed_seq = 0
        self._ids = itertools.count(1)   # next() is atomic: no lock for the commonest call
        self._batch = 0
        self._in_flight: deque[tuple[int, int, int]] = deque()  # (batch, first seq, last seq)
        #: each batch in flight's frames, sent again if its worker moves before it runs them
        #: (kernelproxy.relink)
        self._sent: dict[int, list] = {}
        #: a streamed upload's batch in flight: what its chunks are made of, ``(its upload's
        #: op number, its bytes, the chunk size)``, sent again as frames after its batch's
        #: frames where its worker moves before it runs it (kernelproxy.streamed, relink)
        self._streamed: dict[int, tuple] = {}
        #: why the link ended under a send not yet followed (_follow_broken), or None
        self._broken: str | None = None
        self._origin: dict[int, tuple[str, str, int, Any]] = {}  # seq -> (label, file, line, out)
        self._values: dict[int, Any] = {}
        self.meta = ArrayMetadata()
        #: the live client array of each handle (weakly), so that ``ndarray.base`` returns
        #: the very object that owns a view's memory, as CuPy's does
        self.arrays: dict[int, Any] = {}
        self._dead: dict[int, str] = {}
        self._ended: str | None = None
        self._error: list | None = None
        self._resume: int | None = None
        #: recognises repeated stretches and sends them as replays (kernelproxy.stretch_replay)
        self.stretches = (StretchReplay(self._handle_of, measured=settings.replay_measured,
                                        fast=settings.fast_path, early=settings.early_replay,
                                        several=settings.several_held)
                          if settings.graphs else None)
        #: the run of a held stretch answered from its template (kernelproxy/stretch_templates.py),
        #: while one is under way; whether the stretch just begun may start one (no op of it
        #: queued yet); the arrays dropped since it began, before any op of it
        self._run: TemplateRun | None = None
        self._may_start = False
        self.stretch_frees: list[int] = []
        #: a loop with no sync point cut into pieces that repeat (kernelproxy/loop_cuts.py)
        self._cuts = LoopCuts(self)
        #: replays sent from runs, by batch: their ops' origins are made only if the reply
        #: needs them (an error, a warning, a cancel)
        self._run_origins: dict[int, TemplateRun] = {}
        #: a run's replay sent early, until its reply is read (kernelproxy/early_replay.py),
        #: and one to undo with the next batch (its header A)
        self._early: Early | None = None
        self._undo: list | None = None
        #: replies the worker pushed before their batches went (kernelproxy/pushed_replies.py)
        self._pushes = PushedReplies()
        #: the arrays a loop downloads right after a replay, sent with its reply
        self.trailing = TrailingDownloads(settings.prefetch)
        end_with_process(self)   # closed at exit if still open (kernelproxy.lifetime)

    # ------------------------------------------------------------ issuing ops
    @property
    def staging(self) -> StagingRing | None:
        """A same-host session's shared-memory ring: streamed transfers copy through it
        instead of the socket (kernelproxy.streamed; GPUWB_STAGING=0 turns it off). Its
        link holds it, and closes it with the socket."""
        return self.link.staging

    def open_staging(self) -> None:
        """Ask the session's worker for its staging ring (a link that has none: no ring),
        whose waits then spin as the session's do (protocol/spinning.py)."""
        ring = self.link.open_staging(self.key)
        if ring is not None:
            ring.pause = self.spin_pause

    def new_id(self) -> int:
        return next(self._ids)

    def _handle_of(self, obj: Any) -> int | None:
        hid = getattr(obj, "_h", None)
        if hid is None or (type(obj).__name__ != "ndarray" and not getattr(obj, "_remote_object", False)
                           and not getattr(obj, "_remote_array", False)):   # (a subclass's)
            return None
        if obj._s is not self:
            if self.group is not None and obj._s in self.group:
                raise device_mismatch(obj._s.ordinal, self.ordinal)
            raise ValueError(f"{'an array' if hasattr(obj, '_remote_array') else 'an object'} "
                             "of another remote session cannot be used here")
        if hid in self._dead:
            raise InvalidHandleError(self._dead[hid])
        return hid

    def submit(self, kind: str, want: str, out: int | None, name: Any, target: Any = None,
               args: tuple | list = (), kwargs: dict | None = None, label: str = "") -> int:
        """Queue one op; returns its sequence number. Encoding errors raise here."""
        with self._lock:   # (inline, not @_serialised: this is every op's path)
            __tracebackhide__ = True  # IPython shows the user's frames, not ours
            if self._late_frees:
                self._take_late_frees()
            cut_at = self._cuts.cut_at
            if cut_at is not None and self._seq >= cut_at:
                self._cuts.cut()   # (a loop's piece ended with the op before: it ends here,
                #                    the frees made since in it, as in every piece)
            run = self._run
            if run is not None:   # a held stretch answered from its template: checked, not sent
                if run.take(kind, want, out, name, target, args, kwargs, label):
                    return self._seq
                self._fall_back(at_op=True)   # (not the template's op: the ops so far go as
                #                    records; or a loop's piece answered whole, which ends here)
            if self._may_start and self._run is None:   # a stretch's first op: perhaps a template's
                self._may_start = False
                self._check_open()
                if self._error is None and not self.blocking and self.stretches is not None:
                    run = self.stretches.start_run(self, kind, want, out, name, target, args,
                                                   kwargs, label, self._seq + 1)
                    if run is not None:
                        self._run = run
                        return self._seq
            self._check_open()
            if self._error is not None:  # an earlier op failed: say so before queueing more
                self._raise_pending()
            pack = self._packer.pack
            try:
                body = pack([target, list(args), kwargs or {}])
            except codec.NeedsDeviceViews:   # read those objects first: they may ask the pool
                body = pack([target, codec.with_device_views(list(args)),
                             codec.with_device_views(kwargs or {})])
            seq = self._seq + 1
            record = pack([seq, kind, want, out, name]) + body
            # (numbered once it can be sent: an op refused here, an int too large to send,
            # takes no number the worker would then give the next op, whose value the
            # client would ask for under the number it skipped)
            self._seq = seq
            self._ops.append(record)
            if self.stretches is not None:   # (the stretch's key: one call, on every op)
                self.stretches.current.add_op(kind, want, out, name, target, args, kwargs)
            filename, line = caller(2)   # (submit's caller's caller: past kernelproxy)
            self._origin[seq] = (label or str(name), filename, line, out)
            if kind == m.KIND_UPLOAD:
                return seq   # upload() sends it with its data frame
            queued = len(self._ops)
            if self.blocking and (want == api.ARRAY or want == api.NONE or want == api.ARRAYS):
                self.sync()   # raises this op's error here
            elif self._cuts.cut_at is not None:   # a loop with no sync point, cut into pieces
                pass   # (the op after a piece's last cuts it)
            elif queued >= FLUSH_OPS:
                self.flush(part=True)
            elif (queued >= self._eager_check and not self._cuts.looked and self.loop_cuts
                  and self.eager_flush and self.stretches is not None
                  and self.stretches.current.ops >= DETECT_OPS and self._cuts.look()):
                pass   # (a loop with no sync point: cut here, and after each piece from now)
            elif self.eager_flush and queued >= self._eager_check and not (
                    self.stretches is not None and self.stretches.holding):
                if self._in_flight:
                    self._drain(timeout=0)   # the worker may be done with what it has
                if not self._in_flight:
                    self._eager_at = min(self._eager_at * self.eager_growth, FLUSH_OPS)
                    self.flush(part=True)    # (which sets the next check at _eager_at)
                else:   # look again EAGER_OPS records on, not at every op
                    self._eager_check = queued + EAGER_OPS
            return seq

    @_serialised
    def submit_arrays(self, count: int, kind: str, name: Any, target: Any, args: tuple,
                      kwargs: dict | None, label: str, settled: bool = True
                      ) -> tuple[list[int], list]:
        """Queue a call whose *count* arrays the client names (``api.ARRAYS``,
        kernelproxy/result_structures.py); their handles, and the metadata a run answered
        from a template predicts for each (None: not known here). (Taken before the cut
        after the call ends the run: the worker is not asked for what was predicted.) A
        stretch with such a call is held and the call runs eagerly between its graphs
        (docs/stretch-replay.md, "Calls of several results inside held stretches"). By
        default (``several_join``) the call joins the stretch under way, a step one message
        (0.887x the cut's time over the unseen loops that make such calls, run 315). A call
        not *settled* (issue.call: one that goes as a call only for want of metadata here,
        later ones of the same code going as slices or as two ops) goes in a batch of its own
        where stretches are held: a stretch that took it in would not be the one its later
        runs make. ``GPUWB_SEVERAL_JOIN=0``: where the stretch so far holds no such call and
        is held or may yet be, it ends before the call, which goes in a batch of its own (a
        call that opens the stretch cuts nothing: :meth:`_stretch_has_ops`).
        ``GPUWB_SEVERAL_HELD=0``: no such stretch is held, and the call is cut off wherever
        the stretch may be held, as before.
        Batches so sent are not read at once: a loop with no sync point would pile them up,
        so, as a loop's pieces do (loop_cuts.PIECES_AHEAD), at most so many go unanswered."""
        if not settled and self.stretches is not None:   # (issued otherwise once the client
            cut = True                                      # has the metadata it lacks)
        elif self.stretches is not None and self.stretches.current.several_ok:
            cut = not self.settings.several_join and self._stretch_has_ops() \
                and not self._holds_several() and self._stretch_may_be_held()
        else:
            cut = self._stretch_may_be_held()
        if cut:
            self.flush(drain=False)
        hids = [self.new_id() for _ in range(count)]
        self.submit(kind, api.ARRAYS, hids, name, target, args, kwargs, label)
        run = self._run
        metas = [run.predicted.get(hid) for hid in hids] if run is not None else [None] * count
        if cut:
            self.flush(drain=False)
            self._wait_all_but(PIECES_AHEAD)
        return hids, metas

    @_serialised
    def upload(self, host: np.ndarray, out: int) -> int:
        """Queue an upload of *host* into handle *out* and send it now, zero-copy."""
        data = host if host.flags.c_contiguous else host.copy(order="C")
        if not codec.device_dtype(data.dtype):
            raise codec.unsupported_dtype(data.dtype)
        streamed = self.stream_threshold is not None and data.nbytes > self._upload_frame_bytes()
        # (a small upload's data is copied here, so it may wait in the queue: it is an op of
        # the stretch under way, and a loop that uploads its minibatch each step is one
        # stretch, replayed with the data as a frame of its message: docs/stretch-replay.md,
        # "An upload inside a held stretch")
        copied = not streamed and data.nbytes < INLINE_BYTES
        if not copied and self._stretch_may_be_held():
            # a larger one travels now, zero-copy: the stretch so far ends here, and the
            # upload's array is an input of the next stretch, so that a loop uploading a
            # large array each step is two stretches that repeat, not one that cannot
            # (docs/stretch-replay.md, "Uploads inside a loop"); no reply is read here, so
            # an error of the ops just sent is raised where it was before, not by the upload
            self.flush(drain=False)
        if streamed:
            return send_streamed(self, data, out)
        # (bfloat16, structures: as bytes, there being no buffer of bfloat16)
        sent = data.reshape(-1).view(np.uint8) if data.dtype.kind == "V" else data
        frame = sent.tobytes() if copied else sent
        with _interrupts_deferred:   # (the op and its frame queued together, or neither)
            seq = self.submit(m.KIND_UPLOAD, api.ARRAY, out, codec.dtype_spec(data.dtype), None,
                              [list(data.shape)], label="upload")
            run = self._run
            if run is not None:
                if copied:   # (taken by a held stretch's run: its data goes with the replay)
                    run.payload.append(frame)
                    return seq
                self._fall_back()   # (never a template's: a zero-copy frame cannot wait)
            self._payload.append(frame)
        if not copied:   # (its data goes now, zero-copy: its stretch is never replayed, for
            if self.stretches is not None:   # its frame could not wait for the replay)
                self.stretches.sent_beside()
            self.flush(wait_sent=True)
        elif self.stretches is None or not self.stretches.current.keyable:
            self.flush()
        return seq

    def _upload_frame_bytes(self) -> int:
        """The largest upload sent as a frame of its batch: larger ones stream in chunks,
        through the staging ring where the session has one (STAGED_UPLOAD_BYTES)."""
        if self.link.staging is not None and self.settings.staged_uploads:
            return min(STAGED_UPLOAD_BYTES, self.stream_threshold)
        return self.stream_threshold

    # ------------------------------------------------------------ sending
    @_serialised
    def flush(self, sync_device: bool = False, wait_sent: bool = False, drain: bool = True,
              part: bool = False) -> None:
        """Send the queued ops as one batch (also when empty, if *sync_device*). *part*: the
        ops go early, before the sync point that ends their stretch (kernelproxy.stretch_replay)."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._flush(sync_device, wait_sent, drain, part)

    def _flush(self, sync_device: bool, wait_sent: bool, drain: bool, part: bool) -> None:
        """:meth:`flush`, the lock held (a sync point's own: one lock taken, not three)."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        run = self._run
        if run is not None:   # a stretch answered from its template: one replay, or its ops
            entry = None if part else run.complete()
            if run.early is not None and early_replay.settle(self, run, entry, sync_device):
                return   # (its replay went early: its reply answers it)
            if entry is not None:
                self._send_run(run, entry, sync_device)
                return
            self._fall_back()
        if not self._ops and not sync_device:
            if self.stretches is not None and not part:   # a sync point: the stretch ends
                self.stretches.ended_sent()
                self._stretch_begins()
            return
        self._check_open()
        with _interrupts_deferred:
            stretches = self.stretches
            if stretches is None or part:
                ops, self._ops = self._ops, []
                stretch = None
                if stretches is not None:
                    stretches.split()
            else:   # the ops and their key change hands together: a free record added by a
                # collection meanwhile must join the batch whose key has it
                collecting = gc.isenabled()
                gc.disable()
                ops, self._ops = self._ops, []
                stretch = stretches.swap()
                if collecting:
                    gc.enable()
            self._eager_check = self._eager_at
            payload, self._payload = self._payload, []
            first, last = self._flushed_seq + 1, self._seq
            header = self._batch_header(first, last)
            # (a keyed stretch's payload is its small uploads' data, a frame each: it
            # travels with its replay too)
            if stretch is not None and stretches.shape(header, stretch, first):
                ops = []   # a replay of a held stretch: its entry stands for the ops
            self._header_ends(header, sync_device)
            ops.insert(0, codec.packb(header))
            frame = b"".join(ops)
            if "O" in header:   # (the template of a stretch the worker keeps is built from it)
                stretches.offered_batch(header["b"], frame)
            frames = [frame, *payload]
            self._in_flight.append((self._batch, first, last))
            self._sent[self._batch] = frames
            trackers = self._send(frames, wait_sent)
        self._follow_broken()
        if stretches is not None and not part:
            self._stretch_begins()
        if wait_sent:  # the caller may reuse its array once ZeroMQ has let go of it
            self.wait_sent(trackers)
        elif drain:
            self._drain(timeout=0)

    def _batch_header(self, first: int, last: int) -> dict:
        """The next batch's header for ops *first* to *last* (a flush's, or a run's replay)."""
        self._batch += 1
        self._flushed_seq = last
        self.meta.sent_below = next(self._ids)   # (one id unused per batch: ids need only differ)
        header = {"k": self.key, "b": self._batch, "n": last - first + 1, "r": self._resume}
        if self._undo is not None:   # (an early replay its run did not match: undone first)
            header["A"], self._undo = self._undo, None
        if self.progress is not None:   # (notices of its waits: only where they are shown)
            header["p"] = 1
        return header

    def _header_ends(self, header: dict, sync_device: bool) -> None:
        """What any batch's header may end with: the stretches let go (the worker drops
        them), a wait for the device, the device time asked for."""
        stretches = self.stretches
        if stretches is not None and stretches.drops:
            header["D"] = stretches.take_drops()
        if sync_device:
            header["y"] = 1
        if self.timing:
            header["g"] = 1

    # ------------------------------------------------------------ the fast path
    @_serialised
    def leave_templates(self) -> None:
        """Answer no op from a template until the next stretch (kernelproxy.graphs, before a
        capture): a run under way goes on as its ops."""
        if self._run is not None:
            self._fall_back()
        self._may_start = False

    def _send(self, frames: list, track: bool) -> list:
        """Send a batch already counted in flight. A link that ended is followed once the
        caller has left its critical section (:meth:`_follow_broken`: a ^C meanwhile is not
        held back for as long as the pool takes to say where the session went)."""
        try:
            return self.link.send(frames, track=track)
        except LinkEnded as exc:
            self._broken = str(exc)
            return []

    def _follow_broken(self) -> None:
        """The link ended under a send: the batches in flight, that one among them, go to
        the session's new worker (kernelproxy.relink), or the session is lost."""
        if self._broken is not None:
            reason, self._broken = self._broken, None
            relink(self, reason)

    def wait_sent(self, trackers: list) -> None:
        """Wait until ZeroMQ has let go of a send's frames; a session that moved meanwhile
        (a tcp link queues for a worker that has gone) follows it: its frames then went
        again, copied (kernelproxy.relink)."""
        for tracker in trackers:
            while not tracker.done:
                try:
                    tracker.wait(0.2)
                except zmq.NotDone:
                    if self.heartbeat.lost:
                        self._lose(self.heartbeat.lost)
                    if self._followed():
                        return

    def _link_ended(self, reason: str) -> None:
        raise LinkEnded(reason)

    def _followed(self) -> bool:
        """Whether the session has moved since the link was opened (its heartbeat says):
        then it has followed (kernelproxy.relink)."""
        if self.heartbeat.moves <= self.moves:   # (a beat before the link followed: older)
            return False
        relink(self, "the session's worker changed")
        return True

    # ------------------------------------------------------------ sync points
    @_serialised
    def sync(self, device: bool = False, waiting_for: int | None = None) -> None:
        """Send everything, wait for every reply, raise the first pending error.

        With *device*, also wait until the device has finished the work.
        """
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._sync(device, waiting_for)

    def _sync(self, device: bool, waiting_for: int | None) -> None:
        """:meth:`sync`, the lock held."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._eager_at = self._eager_check = EAGER_OPS
        if self._late_frees:   # (as flush's own lock would take them)
            self._take_late_frees()
        self._flush(device, False, False, False)
        self._wait_through(None)
        if self.stretches is not None:   # (the stretch that ended here is timed)
            self.stretches.synced()
        if not self._ops:   # no reply can still carry metadata of a dropped array
            self.meta.settled()
        self._raise_pending(waiting_for)

    @_serialised
    def value(self, seq: int) -> Any:
        """Wait for the value of op *seq* (a sync point)."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        if self._late_frees:   # (as sync's own lock would take them)
            self._take_late_frees()
        self._sync(False, seq)
        return self._take_value(seq)

    def _take_value(self, seq: int) -> Any:
        """Op *seq*'s value, which its batch's reply brought; a clear error if it never
        ran (its worker ended, or an interrupt cancelled it), never a bare KeyError."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        try:
            return self._values.pop(seq)
        except KeyError:
            pass
        if self._ended:
            self._lose(self._ended)
        raise InvalidHandleError(f"op {seq} has no value (it was cancelled before it ran, or "
                                 "issued by value_later and its value already taken)")

    @_serialised
    def download(self, array: Any) -> np.ndarray:
        """*array*'s data as a NumPy array (a sync point): the copy the last replay's reply
        brought where its loop downloads it there (kernelproxy/trailing_downloads.py), else
        downloaded now."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        before = self._seq
        meta = self._trailing_meta(array)
        if meta is not None:
            host = self.trailing.take(array._h, before, math.prod(meta[0]) * meta[1].itemsize)
            if host is not None:
                return host
        host = self.value(self.submit(m.KIND_DOWNLOAD, api.VALUE, None, None, array, (), {},
                                      "ndarray.get"))
        self.trailing.downloaded(before, self._seq)
        return host

    @_serialised
    def read_value(self, array: Any, kind: str, pool_value: Callable[[], Any]) -> Any:
        """``float(array)`` (*kind*: ``"float"``, ``"int"``, ``"bool"``, ``"complex"``) of a
        0-d array: from the copy the last replay's reply brought where its loop reads it
        there (kernelproxy/trailing_downloads.py), else *pool_value()*, the pool's (a sync
        point)."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        trailing = self.trailing
        before = self._seq
        meta = self._trailing_meta(array)
        # (0-d, of a dtype whose copy converts as the pool's array does: else it is neither
        # learnt nor asked for, and goes to the pool)
        if meta is not None and not meta[0] and answers_value(meta[1], kind):
            host = trailing.take(array._h, before, meta[1].itemsize, True)
            if host is not None:
                value = host_value(host, kind)
                if value is not None:
                    trailing.hits += 1
                    return value
        value = pool_value()
        trailing.downloaded(before, self._seq)
        return value

    def _trailing_meta(self, array: Any) -> tuple | None:
        """*array*'s metadata where the last replay's trail may answer a read of it (a
        trail under way, no error pending, the session open), else None; None too where its
        metadata is not known here (not learnt: its size is not known)."""
        if self.trailing.trail is None or self._error is not None:
            return None
        self._check_open()   # (a closed or lost session's copies are nobody's)
        return array._m or self.meta.peek(array._h)

    def value_later(self, operator: str, *args: Any) -> int:
        """Queue an op whose value is wanted later (``"float"``, ``"int"``, ``"bool"``,
        ``"repr"`` of a remote array); returns its sequence number for :meth:`result`.
        Nothing waits now: a loop can issue the next step's work before asking."""
        if operator not in api.OPERATORS:
            raise ValueError(f"{operator!r} is not an operator the pool evaluates")
        return self.submit(m.KIND_OPERATOR, api.VALUE, None, operator, None, args, label=operator)

    @_serialised
    def result(self, seq: int) -> Any:
        """The value of op *seq* (from :meth:`value_later`). Waits only for the batches up to
        the one carrying it, not for work issued after it, so the device stays busy."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        if seq > self._flushed_seq:
            self.flush(drain=False)
        self._wait_through(seq)
        error = self._error
        if error is not None and (error[0] is None or error[0] <= seq):
            self._raise_pending(seq)
        return self._take_value(seq)

    def meta_of(self, hid: int) -> tuple:
        # (no lock of its own: the pops are atomic and the wait is sync's, which takes it)
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        found = self.meta.take(hid)
        if found is None:
            if hid in self._dead:
                raise InvalidHandleError(self._dead[hid])
            self.sync()
            found = self.meta.take(hid)
            if found is None:
                raise InvalidHandleError(self._dead.get(hid, f"no metadata for handle {hid}"))
        return found

    def _raise_pending(self, waiting_for: int | None = None) -> None:
        """Raise the first failed op's error; the note names it unless it is the op waited on."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        error = self._error
        if error is None:
            return
        self._error = None
        seq, name, text, _ = error
        origin = self._origin
        exc = error_class(name)(text)
        if seq in origin:
            label, filename, line, _out = origin[seq]
            if seq != waiting_for:
                where = (self.location_label(filename, line) if self.location_label
                         else f"{filename}:{line}")
                exc.add_note(f"raised by {label}, issued at {where}")
        for s in [s for s in origin if s <= self._seq]:
            del origin[s]
        raise for_user(exc)   # shown with the user's frames, not ours (kernelproxy.tracebacks)

    # ------------------------------------------------------------ lifecycle
    @_serialised
    def cancel(self) -> None:
        """Drop queued work: unsent ops are discarded and the worker skips what it has not
        run yet of the batches sent so far. Arrays those ops would have made raise a clear
        error when used. Frees are kept. Called on KeyboardInterrupt at a sync point."""
        reason = "this array was never computed: its op was cancelled by an interrupt"
        if self._run is not None:   # (its ops as records first: dropped below as any)
            self._fall_back()
        kept = []
        for record in self._ops:
            if record[:1] == b"\x95":  # an op (a 5-item head): dropped
                continue
            kept.append(record)       # a free record: still sent
        self._ops = kept
        if self.stretches is not None:
            self.stretches.spoil()   # (its ops are gone, its frees kept: no key fits)
        for seq in [s for s in self._origin if s > self._flushed_seq]:
            mark_dead(self._dead, self._origin.pop(seq)[3], reason)
        self._seq = self._flushed_seq  # the dropped ops never existed for the worker
        if self._in_flight:
            self.link.send([codec.packb({"k": self.key, "c": self._in_flight[-1][0]})])

    def release(self, hid: int, unread: bool = False) -> None:
        """Called when a client array is dropped: a free record joins the op stream here.
        *unread*: the array never took its metadata, which may then be still to come.

        Never waits for the lock: an array's ``__del__`` runs in whatever thread the
        collector runs in, and a thread that waits here for a session whose holder waits for
        the pool deadlocks where that thread is the pool's (an embedded pool's arbiter, its
        front door). Dropped while another thread holds the session, the free waits in
        ``_late_frees`` for the next call that takes the lock (a later free only keeps the
        array a little longer)."""
        if not self._lock.acquire(False):   # (blocking=False, without the keyword's parsing)
            self._late_frees.append((hid, unread))
            return
        try:
            self._release_held(hid, unread)
        finally:
            self._lock.release()

    def _take_late_frees(self) -> None:
        """The frees of arrays dropped while another thread held the lock (held now)."""
        late = self._late_frees
        while late:
            self._release_held(*late.popleft())

    def _release_held(self, hid: int, unread: bool) -> None:
        """:meth:`release`, the lock held."""
        run = self._run
        if run is not None:   # (a run's frees follow its replay, or its ops if it falls back)
            run.freed(hid)
        else:
            self._queue_free(hid)
        if self.arrays.pop(hid, None) is None and self.stretches is not None:
            self.stretches.object_gone(hid)   # (a remote object's: its stretches go)
        never_made = self._dead.pop(hid, None) is not None   # (no metadata will come)
        self.meta.dropped(hid, unread and not never_made)
        if self.trailing.ready:   # (a copy a reply brought goes with its array)
            self.trailing.dropped(hid)

    def _queue_free(self, hid: int) -> None:
        """A free record for *hid* joins the queue (and the stretch's key; before the
        stretch's first op, its replay's header F)."""
        self._ops.append(self._free_packer.pack(hid))
        if self.stretches is not None:
            self.stretches.current.add_free(hid)
            if self._may_start:   # (dropped before the stretch's first op)
                self.stretch_frees.append(hid)

    def _check_open(self) -> None:
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        if self.closed:
            raise SessionLostError(f"this session was lost: {self.lost_reason}"
                                   if self.lost_reason else "this session is closed")
        if self._ended and self._error is None:
            self._lose(self._ended)
        if self.heartbeat.lost:
            self._lose(self.heartbeat.lost)
        if self.heartbeat.moves > self.moves:   # (moved: follow before sending on)
            self._followed()

    def _lose(self, reason: str) -> None:
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self.closed = True
        self.lost_reason = reason   # (said again by every later op: the pool's reason)
        self._in_flight.clear()
        self._sent.clear()
        self._streamed.clear()
        self._run_origins.clear()   # (the runs whose replies will not come)
        self._early = None
        self._pushes.clear()
        self.trailing.clear()
        self._waits.end()
        self._release()
        raise for_user(SessionLostError(reason))

    def memory_info(self) -> dict:
        """This session's device memory in use and limit, array count, ops run (a sync point)."""
        return self.value(self.submit(m.KIND_INFO, api.VALUE, None, "info", label="memory info"))

    @property
    def ops_issued(self) -> int:
        """Ops this session has issued so far."""
        return self._seq

    def status(self, history: float | None = None) -> dict:
        """The pool's status (devices, users and shares, sessions) as the front door reports it;
        with *history*, also each user's device time per second over that many seconds.
        Any thread may ask, without the session's lock (a panel's thread while a cell
        computes): so not on the session's context, which its close may end meanwhile."""
        msg: dict[str, Any] = {"t": "status", "token": self._token}
        if history:
            msg["history"] = float(history)
        return signed_in_request(process_context(), self.address, msg, 10,
                                 server_key=self.server_key)

    @_serialised
    def close(self, wait: float = CLOSE_WAIT) -> None:
        """End the session: the worker exits and frees every array. Device 0's session of a
        client that holds several devices closes the others' too. *wait* bounds each wait
        for the pool (at exit, kernelproxy.lifetime waits less)."""
        if self.closed:
            self._release()   # (lost: released already)
            return
        if self.group is not None and self.ordinal == 0:
            for other in self.group[1:]:
                other.close(wait)
        try:
            if self._in_flight:  # nobody will read those results: stop the queued work
                self._ops = []
                self.cancel()
            deadline = time.monotonic() + wait
            while self._in_flight and time.monotonic() < deadline:
                self._drain(timeout=0.1)
        except Exception:  # closing anyway
            pass
        self.closed = True
        self.trailing.clear()
        try:   # (a wait shown when its reply never came: blanked, not left in the cell)
            self._waits.end()
        except Exception:
            pass
        self.heartbeat.stop()
        try:
            self.link.send([codec.packb({"k": self.key, "t": "close", "b": 0})])
            self.link.poll(int(min(wait, 1.0) * 1000))
            door_request(self.ctx, self.address, {"t": "close", "session": self.id, "key": self.key},
                         min(wait, 5.0), server_key=self.server_key)
        except Exception:  # the pool may already be gone
            pass
        finally:
            self._release()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<kernelproxy.Session {self.id} on {self.device.get('name', '?')} ({state})>"
