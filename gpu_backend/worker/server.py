"""The session worker process: one session, one device context, one socket.

Started ahead of time by the front door (a warm spare), it opens its device
(creating the CUDA context and warming common kernels), binds a ROUTER socket
on a free port and reports ``ready``. When the front door assigns it a
session it serves that session's batches until the client closes it, the
front door stops it (lease expired), or the front door goes away.
"""

from __future__ import annotations

from collections import deque
import hmac
import os
import secrets
import sys
import time
import traceback
from typing import Any

import msgpack
import zmq

from ..devices import open_device
from gpu_backend.runtime.gc_pauses import settle
from ..protocol import spinning
from ..protocol.codec import packb, unpackb
from ..protocol.errors import AuthenticationError, ProtocolError, error_name
from .executor import Executor
from .grants import GRANT_STEP, MemoryGrant
from .handles import HandleTable
from .lease import DeviceLease
from . import staged
from .control import ControlChannel, ControlClosed
from .links import UnixPeer, open_links
from .presence import CLIENT_GONE
from .pacing import Pacer
from .splitting import Splitter
from .phases import NO_PHASES, PhaseClock, PhaseRecorder
from .settings import WorkerSettings
from .spin_slots import SpinSlots
from .swap import SessionSwap, host_memory
from . import handover
from .server_moves import SessionMoves
from .server_replies import ReplySending
from .server_sharing import DeviceSharing
from .wait_notices import WaitNotices

__all__ = ["WorkerServer"]

USAGE_INTERVAL = 0.5
#: A streamed upload whose next chunk takes longer than this is abandoned.
CHUNK_TIMEOUT = 30.0
#: After answering a batch, poll without sleeping this long: an interactive
#: client's next batch usually follows at once, and a sleeping thread takes
#: tens of microseconds to wake.
#: With few cores, spinning steals the CPU the client needs, so it is off.
SPIN_SECONDS = 200e-6 if (os.cpu_count() or 1) >= 4 else 0.0


class WorkerServer(SessionMoves, DeviceSharing, ReplySending):
    def __init__(self, device_spec: str, control: ControlChannel, worker_id: str, bind_host: str,
                 arbiter: str | None = None, key_file: str | None = None,
                 baton: str | None = None, ipc_dir: str | None = None,
                 spin_slots: SpinSlots | None = None, long_spin: float = 0.0,
                 settings: WorkerSettings = WorkerSettings()) -> None:
        #: what this worker measures and how its NumPy device streams (worker/settings.py)
        self.settings = settings
        self.device_spec = device_spec
        self.run_dir: str | None = None   # the host's private run directory (main sets it)
        self.device = open_device(device_spec)
        if settings.stream_bytes and self.device.kind == "numpy":
            self.device.stream_bytes = settings.stream_bytes
        if hasattr(self.device, "swap_host_copy"):   # (a GPU: how swap's host tier copies)
            self.device.swap_host_copy = settings.swap_host_copy
        self.ctx = zmq.Context()
        #: the pool, over the socket pair this process inherited (control.py): the only
        #: channel on which the pool hears ``ready`` and sends the session's key
        self.control = control
        #: set when the control channel hung up: the pool has gone (killed or stopped)
        self.pool_gone = False
        self.stopped = False     # told to stop by the pool
        #: set when the client went away without closing the session (worker.presence)
        self.client_gone = False
        #: its clients: a ROUTER (tcp://) and, for clients on this host, a Unix socket in the
        #: pool's same-host directory, whose name only the session's hello reply tells (a
        #: local user who finds it anyway is not waited for until it proves the key: links)
        unix_path = os.path.join(ipc_dir, f"{worker_id}-{secrets.token_hex(12)}") if ipc_dir else None
        self.links = open_links(self.ctx, bind_host, key_file, unix_path)
        self.bind_host, self.key_file = bind_host, key_file   # (a move's stream: loan_stream)
        self.key = b""
        self.user = ""         # the session's user (names diagnostics only)
        self.table = HandleTable(self.device)
        self.executor = Executor(self.device, self.table)
        #: the session's arrays swapped out to a file when idle, back at its next batch
        self.swap = SessionSwap(self.table, self.device, self.executor.replay.release_graphs)
        #: what the batch being served waits for before its ops run (its swap-in, room on
        #: the device), told to a client that reads notices (worker/wait_notices.py)
        self.notices = WaitNotices(self.links.send_message)
        self.executor.stretches.enabled = settings.graphs != "off"
        if settings.graphs != "on":
            self.executor.replay.rerun_only()
        if settings.unpaced_replay is not None:
            self.executor.replay.unpaced = settings.unpaced_replay
        self.executor.replay.paced_keeps_held = settings.paced_keeps_held
        self.executor.replay.pace_by_lead = settings.pace_by_lead
        self.executor.replay.unpaced_backlog = settings.unpaced_backlog
        if self.executor.replay.graphs is not None:
            self.executor.replay.graphs.copy_tables = settings.copy_tables
            self.executor.replay.graphs.graphed_draws = settings.graphed_draws
        if settings.run_ahead is not None:
            self.executor.replay.ahead.max_seconds = settings.run_ahead
        if settings.read_ahead is not None:
            self.executor.replay.ahead.read_now_seconds = settings.read_ahead
        self.executor.replay.ahead.beside = settings.run_ahead_beside
        self.executor.draws.enabled = settings.draws_ahead
        if settings.read_gap_share is not None:
            self.executor.replay.ahead.gap_share = settings.read_gap_share
        #: a loop's replays that go on by fixed steps (worker/steady_lane.py)
        self.lane = self.executor.replay.lane
        self.lane.enabled = settings.steady_lane
        self.lane.pushes.enabled = settings.pushed_replies
        self.lane.pushes.commit_ahead = settings.push_ahead
        self.lane.pushes.commit_writes = settings.commit_writes != "off"
        self.lane.pushes.commit_writes_always = settings.commit_writes == "always"
        self.lane.pushes.commit_first = settings.commit_first != "off"
        self.lane.pushes.commit_first_always = settings.commit_first == "always"
        self.lane.defer_reads = settings.defer_reads != "off"
        self.lane.defer_always = settings.defer_reads == "always"
        self.lane.measures = settings.lane_measures
        self.lane.overlap = settings.overlap_steps
        self.closed = False
        #: the pool asked this worker to park its session for another (a move: the
        #: directory, "" for the swap directory; worker/handover.py), done at the loop
        self.park_dir: str | None = None
        #: a move asked: lend the arrays (within the host; *park_stream*: to another host,
        #: streamed), and whether they may go through the swap directory instead
        self.park_lend = self.park_stream = False
        self.room_refused = False   # (an allocation asked for room and the pool made none)
        #: the batch a session was moved for, as its arrays did not fit (worker/server_moves:
        #: that batch is not moved again, where the pool's figures of the target were old)
        self.moved_for = 0
        self.park_files = True
        self.adoption_failed = False
        self.parked = False
        self._queue: deque = deque()   # messages read ahead while looking for cancels
        self.cancel_upto = 0
        self._undeliverable = 0
        self._client = b""     # the peer whose batch is being run
        self._batch = 0        # ... and its number
        self.executor.receive_chunk = self._receive_chunk
        self.executor.cancelled = self._cancelled
        self.executor.more_work = self._more_work
        #: the device lease (fair and fifo policies); None: CUDA time-slicing decides. Its
        #: identity at the arbiter is a secret told to the pool with ``ready``, never the
        #: worker id of the command line: nobody else can speak for this worker there
        self.lease_id = secrets.token_hex(16)
        self.lease = DeviceLease(self.ctx, arbiter, self.lease_id, baton) if arbiter else None
        if self.lease is not None:
            self.lease.release_done = settings.release_done
        self.executor.pacer = Pacer(self.device, self.lease, lead=settings.pacing_lead,
                                    trace=settings.pacing_trace_dir is not None,
                                    release_at_read=settings.release_at_read,
                                    share_lead=settings.share_lead,
                                    share_nap=settings.share_nap,
                                    share_grain=settings.share_grain,
                                    priced=settings.share_priced)
        if self.lease is not None and settings.split_piece > 0:   # long ops in pieces (opt-in)
            self.executor.splitter = Splitter(self.device, self._after_piece, settings.split_piece,
                                              exclusive=self.executor.pacer.exclusive)
        self._last_usage: tuple = ()
        self._last_usage_time = 0.0
        self._reported_memory = 0   # the memory the last usage report said
        #: each message's phases, told to a recorder that does nothing unless the settings
        #: ask for them to be timed (GPUWB_WORKER_PHASES=DIR, a diagnostic)
        self.phases: PhaseRecorder = (PhaseClock(settings.phases_dir) if settings.phases_dir
                                      else NO_PHASES)
        self.executor.phases = self.phases
        #: the pool's spin slots: holding one, the worker polls *long_spin* seconds after
        #: each message instead of SPIN_SECONDS (see spin_slots.py); None: never long
        self.spin_slots = spin_slots if long_spin > SPIN_SECONDS else None
        self.long_spin = long_spin

    # ---------------------------------------------------------------- control
    def _send_control(self, msg: dict) -> None:
        """Tell the pool; if it has gone, the session ends (``pool_gone``)."""
        try:
            self.control.send(msg)
        except (ControlClosed, OSError):
            self.pool_gone = True
            self.closed = True

    def _read_control(self) -> dict | None:
        """The pool's next message (None: none, or not a map); marks the pool gone at its end."""
        try:
            msg = self.control.recv()
        except ControlClosed:
            self.pool_gone = True
            self.closed = True
            return None
        return msg if isinstance(msg, dict) else None

    def _on_control(self, msg: dict) -> None:
        """A message of the pool's met while serving: stop, or give memory back."""
        kind = msg.get("t")
        if kind == "stop":
            self.closed = True
            self.stopped = True
        elif kind == "reclaim":
            self._hand_back_memory(asked=True)
        elif kind == "park":   # the session moves to another worker: at the loop, too
            self.park_dir = msg["dir"] if isinstance(msg.get("dir"), str) else ""
            self.park_lend = msg.get("lend") is True
            self.park_stream = msg.get("stream") is True
            self.park_files = msg.get("files") is not False
        elif kind == "unpark":   # the pool gave the move up: the session stays here
            self.park_dir = None
        elif kind == "swap":   # the pool needs this session's device memory: at the loop,
            self.swap.asked = True   # never inside a batch (an allocation may be waiting)
            host = msg.get("host")   # (what of it may stay in host memory: the door's budget)
            self.swap.host_room = host if type(host) is int and host > 0 else 0
            idle = msg.get("idle")   # (for another session's memory, as idle this long)
            self.swap.asked_idle = float(idle) if type(idle) in (int, float) and idle > 0 else None

    def wait_for_session(self) -> bool:
        """Report ready, then block until assigned (True) or told to stop (False). What
        start-up made is frozen out of the garbage collector's sight first (gc_pauses)."""
        settle()
        self._send_control({"t": "ready", "port": self.links.port, "ipc": self.links.ipc, "info": self.device.info(),
                            "runtime": self.device.runtime_facts(), "lease": self.lease_id,
                            "host_memory": host_memory()})
        while not self.pool_gone:
            if self.control.poll(1.0):
                msg = self._read_control()
                if msg is None:
                    continue
                if msg.get("t") == "assign":
                    self.key = self.links.key = bytes(msg["key"])
                    self.user = str(msg.get("user") or "")
                    self.swap.configure(msg.get("swap_idle"), msg.get("swap_dir"), msg.get("session"))
                    self._share_device_memory(msg.get("device_memory"))
                    self._share_device_compute(msg.get("device_turns"))
                    limit = int(msg["memory_limit"])
                    self.device.set_memory_limit(limit)
                    self.device.bound_process(limit)
                    self.executor.memory_limit = limit
                    if msg.get("grant") is not None:   # the user has a memory quota
                        self.device.use_grant(MemoryGrant(
                            self._ask_memory, limit, int(msg["grant"]), self.device.set_memory_limit,
                            int(msg.get("grant_step") or GRANT_STEP), self.device.release_cache,
                            quota=msg.get("quota") if type(msg.get("quota")) is int else None,
                            user=self.user))
                    if isinstance(msg.get("adopt"), (str, bytes)):   # a session moved here (its
                        self._adopt(msg["adopt"], msg.get("adopt_from"))   # copy within its
                        # limit and grant)
                        if self.adoption_failed:
                            return False
                    settle(collect=False)
                    return True
                if msg.get("t") == "stop":
                    return False
        return False

    # ---------------------------------------------------------------- serving
    def serve(self) -> str:
        poller = zmq.Poller()
        links = self.links
        links.register(poller)
        control = self.control.fileno()
        poller.register(control, zmq.POLLIN)
        lease = self.lease
        if lease is not None:
            poller.register(lease.sock, zmq.POLLIN)
        pacer = self.executor.pacer
        slots = self.spin_slots
        window = SPIN_SECONDS      # how long to poll after a message: long while holding a slot
        spin_until = last = 0.0
        may_claim = False          # a slot is tried once per pause, when the short spin ends
        phases = self.phases
        while not self.closed:
            if self.park_dir is not None and not self._queue and not links.poll(0) \
                    and self._park():
                return "parked: the session moved to another worker"
            if self._queue or links.poll(0):
                phases.start(slept=False)
                self._handle_client()
                last = time.perf_counter()
                spin_until, may_claim = last + window, True
                self._report_usage()   # time-gated: a busy session is accounted as it goes
                continue
            if time.perf_counter() < spin_until:
                pacer.harvest()   # measure the last batch now, not at the start of the next
                if window > SPIN_SECONDS and lease is not None and lease.pending():
                    pacer.idle()   # a long spin is idle time: others waiting get the device
                spinning.pause()   # a client sharing this CPU runs at once (protocol/spinning.py)
                continue
            if may_claim and slots is not None:
                may_claim = False
                if slots.claim():   # keep polling: the next sync of a loop or a person finds us awake
                    window = self.long_spin
                    spin_until = last + window
                    continue
            if slots is not None and slots.held:
                slots.release()
                window = SPIN_SECONDS
            # (woken when the session's swap time comes, not up to a report interval later)
            events = dict(poller.poll(self.swap.wait(USAGE_INTERVAL) * 1000))
            if links.mine(events):
                phases.start(slept=True)
                self._handle_client()
                last = time.perf_counter()
                spin_until, may_claim = last + window, True
            elif lease is not None and lease.sock in events:
                pacer.idle()   # others wait: an idle holder hands the device over at once
            if control in events:
                msg = self._read_control()
                if msg is not None:
                    self._on_control(msg)
                if self.pool_gone:
                    return "pool went away"
                if self.stopped:
                    return "stopped by the pool"
            if not events:
                pacer.idle()   # measure what finished; a lone holder reports, a told one hands over
                self._hand_back_memory()
                if self.swap.due():   # the pool says whether (its user's swap cap), once
                    self.swap.proposed = True   # per idle spell
                    self._send_control({"t": "swap_due", "bytes": self.device.memory_used()})
            if self.swap.asked:
                self.swap.asked = False
                self._swap_out()
            if (not events or links.presence.monitor in events) and self._client_left():
                break
            self._report_usage()
        if self.executor.fatal:
            return f"device fault: {self.executor.fatal}"
        if self.pool_gone:
            return "pool went away"
        if self.stopped:
            return "stopped by the pool"
        if self.client_gone:
            return CLIENT_GONE
        return "closed by the client"

    def _receive(self) -> tuple[Any, list] | None:
        """One client message: small frames as bytes, array payloads as zero-copy frames;
        None when what arrived was no message (a Unix peer connecting or leaving)."""
        if self._queue:
            return self._queue.popleft()
        return self.links.recv_message()

    def _handle_client(self) -> None:
        """Serve one message; a bug here is logged, never the end of the session."""
        self._answering: tuple | None = None
        try:
            self._serve_message()
        except Exception as exc:  # keep serving; the client gets this batch's error, not silence
            traceback.print_exc(file=sys.stderr)
            if self._answering is not None:
                ident, batch = self._answering
                try:
                    self.links.send_message(ident, [packb({**_failure(exc), "b": batch})])
                except zmq.ZMQError:
                    pass

    def _serve_message(self) -> None:
        started = time.perf_counter()
        received = self._receive()
        phases = self.phases
        if received is None:   # a connection opened or closed: perhaps the client's, for good
            self._client_left()
            return
        phases.mark("received")
        ident, frames = received
        lane = self.lane
        # a message whose reply was pushed before it came (worker/pushed_replies.py): its
        # reply is not sent again, but for a failure
        quiet = bool(lane.pushes.sent) and self._claim_pushed(started, ident, frames)
        if quiet is None:
            return
        if lane.plan is not None and not quiet:   # (a loop's next replay, known: steady_lane.py)
            plan = lane.take(frames, self.cancel_upto,
                             self.swap.swapped is not None or self.pool_gone)
            if plan is not None and self._serve_in_lane(started, ident, plan):
                return
        body = None   # (a replay's header alone, answered without error: SteadyLane.served)
        try:
            if not frames:
                raise ProtocolError("a batch needs a frame with its header and ops")
            header, ops = self.executor.open_batch(frames[0])
            if not isinstance(header, dict):
                raise ProtocolError("the batch header is not a map")
            key = header.get("k")
            if not isinstance(key, bytes) or not self.key or not hmac.compare_digest(key, self.key):
                raise AuthenticationError("wrong session key")
            if "u" in header:   # a chunk of an upload that was skipped after an error:
                staged.drop_chunk(ident, header)   # dropped, unanswered (its slot freed)
                return
            self._client = ident
            if self.links.presence.over is None:   # the client is here: its absence now counts
                self.links.presence.verified(ident)
            if header.get("t") == "staging":   # a same-host client asks for shared memory
                ringed = staged.answer_request(self.links, ident, self.device)
                self.executor.stream_from = staged.STAGED_DOWNLOAD_BYTES if ringed else None
                return
            if header.get("t") == "close":
                self.closed = True
                self.links.send_message(ident, [packb({"b": header.get("b"), "closed": True})])
                return
            self._answering = (ident, header.get("b"))
            if "c" in header:
                return  # a cancel that arrived while idle: nothing queued to drop
            if lane.pushes.sent and not quiet:   # (another batch than the pushed one: its
                lane.pushes.roll_back(lane, True)   # client drops those pushes)
            batch = header.get("b") if type(header.get("b")) is int else 0
            self._batch = batch
            # cancels already seen skip the batch outright; new ones are looked for between ops
            phases.mark("opened")
            self.swap.worked()
            notices = self.notices   # (to a client that reads them: the header's p)
            notices.batch(ident, batch, header.get("p") == 1)
            reply = None
            swapped = self.swap.swapped
            if swapped is not None:   # its arrays come back first (or the batch
                self._last_usage_time = 0.0     # fails with why, and nothing is lost)
                notices.start("swap_in", swapped.nbytes)
                self.room_refused = False
                try:
                    self.swap.back(lambda done: notices.progress("swap_in", done))
                except Exception as exc:
                    if self._elsewhere(exc, swapped.nbytes, batch):   # (moved to a device
                        self._batch = batch - 1   # with room: this batch is sent there again,
                        if self._park():          # unanswered here)
                            notices.end("swap_in")
                            return
                        self._batch = batch
                    reply, out = self.executor.unrun_batch(header, ops, exc), []
                finally:
                    notices.end("swap_in")
            if reply is None:
                reply, out = self.executor.run_batch(header, ops, frames[1:],
                                                     cancelled=batch <= self.cancel_upto and not quiet)
                if "T" in header and reply.get("e") is None and "c" not in reply:
                    body = frames[0]   # (any frames after it: its uploads' data)
            phases.mark("run")
        except Exception as exc:  # a bad message: answer it, keep serving
            reply, out = _failure(exc), []
            if self._answering is not None and not isinstance(exc, ProtocolError):
                traceback.print_exc(file=sys.stderr)   # (not the client's making: a bug)
        self.notices.finish()   # (a wait an op left open ends before its reply)
        reply["t"] = time.perf_counter() - started
        if self.pool_gone:   # the batch stopped because the pool died: the session is over
            # (across hosts, what this worker sees die is its host's agent: the host is lost)
            reply["z"] = "the pool, or this host's agent, has gone"
        if self.executor.fatal:
            self.closed = True  # answered below, then the worker ends with its context
        self._report_before_reply()
        try:
            if not quiet or reply.get("e") is not None or "c" in reply or "z" in reply:
                self._send_reply(ident, reply, out)   # (pushed and failed: a late reply)
            self._answering = None   # (answered: a bug after it must not answer again)
        except zmq.ZMQError as exc:  # the client went away or stopped reading: its loss
            self._answering = None
            self._undelivered(exc)
        finally:
            if type(ident) is UnixPeer and ident.staging is not None:
                ident.staging.release_held()   # the batch's last staged upload chunk
            self.executor.after_reply()
            self.lane.served(body, len(frames) - 1 if body is not None else 0)
            phases.mark("after_reply")
            phases.end()
        self._push_ahead(ident)

    def _more_work(self) -> bool:
        """Whether a batch from the client is already waiting (asked at a batch's end)."""
        return bool(self._queue) or self.links.poll(0)

    def _after_piece(self, executed: int) -> bool:
        """Between two pieces of a split op: the pacer's look at the lease (worker/splitting.py)."""
        return self.executor.pacer.after_piece(executed, self._cancelled)

    def _cancelled(self) -> bool:
        """Asked by the executor between ops: cancelled by the client, orphaned, or its
        client gone (nobody will read the results)?"""
        return self._poll_cancel() >= self._batch or self._orphaned() or self._client_left()

    def _client_left(self) -> bool:
        """Whether the client has gone without closing the session (worker.presence)."""
        if not self.client_gone and self.links.presence.gone():
            self.client_gone = self.closed = True
        return self.client_gone

    def _orphaned(self) -> bool:
        """The pool process is gone: stop mid-batch rather than run on unowned."""
        if self.pool_gone or self.control.hung_up(0):
            self.pool_gone = self.closed = True
            return True
        return False

    def _poll_cancel(self) -> int:
        """Read what has arrived; take out cancel requests; return the highest batch cancelled.

        A client interrupted by its user sends ``{"k", "c": batch}``: batches up to that
        number are not run (or stop between ops), so queued work ends promptly.
        """
        while self.links.poll(0):
            received = self.links.recv_message()
            if received is None:
                continue
            ident, frames = received
            header = _peek_header(frames)
            if (isinstance(header, dict) and "c" in header and isinstance(header.get("k"), bytes)
                    and hmac.compare_digest(header["k"], self.key) and type(header["c"]) is int):
                self.cancel_upto = max(self.cancel_upto, header["c"])
            else:
                self._queue.append((ident, frames))
        return self.cancel_upto

    def _receive_chunk(self, seq: Any, index: int) -> memoryview:
        """The next chunk of the streamed upload op *seq* from the client being served."""
        ident = self._client
        while True:
            if not self._queue and not self.links.poll(CHUNK_TIMEOUT * 1000):
                raise ProtocolError(f"upload data stopped arriving (waited {CHUNK_TIMEOUT:g} s)")
            received = self._receive()
            if received is None:
                continue
            got, frames = received
            if got != ident:  # another peer mid-upload: refuse it, keep waiting
                self.links.send_message(got, [packb(_failure(ProtocolError("worker busy")))])
                continue
            header = unpackb(frames[0]) if frames else None
            if not isinstance(header, dict) or header.get("u") != seq or header.get("i") != index:
                raise ProtocolError(f"expected chunk {index} of upload {seq}")
            if len(frames) == 1 and "s" in header:   # its bytes are in a shared-memory slot
                return staged.upload_slot(got, header)
            if len(frames) != 2:
                raise ProtocolError(f"expected chunk {index} of upload {seq}")
            return frames[1].buffer

    def _report_usage(self) -> None:
        now = time.monotonic()
        if now - self._last_usage_time < USAGE_INTERVAL:
            return
        counters = {**self.executor.usage(), **self.swap.figures()}
        usage = (self.device.memory_used(), len(self.table), *counters.values())
        if usage != self._last_usage:
            self._send_control({"t": "usage", "memory": usage[0],
                                "arrays": usage[1] + counters["swapped_arrays"], **counters,
                                "idle": round(time.monotonic() - self.swap.last_work, 4)})
            self._last_usage, self._last_usage_time = usage, now
            self._reported_memory = usage[0]

    def close(self, reason: str) -> None:
        if self.spin_slots is not None:
            self.spin_slots.close()   # others may spin while this one winds down
        final = {"t": "ended", "reason": reason, "memory": 0, "arrays": len(self.table),
                 "ops": self.executor.ops_run}
        if not self.executor.fatal:  # after a device fault, freeing would only fault again
            try:
                self.device.synchronize()
                final.update(self.executor.usage())
            except Exception:  # a broken context: report what was measured before
                pass
            final["memory"] = self.device.memory_used()
            self.table.clear()
        self.swap.discard()
        board = getattr(self.device, "board", None)
        if board is not None:
            board.close()
        turns = getattr(self.device, "turns", None)
        if turns is not None:
            turns.close()
        try:
            # the traces first: the pool may end this process once it has the report (a
            # spare that never served a session has none: it would only race the pool's end)
            if self.settings.pacing_trace_dir and self.user:
                self.executor.pacer.write_trace(self.settings.pacing_trace_dir,
                                                f"{self.user}-{os.getpid()}")
            self.phases.write()
            if not self.pool_gone:
                self._send_control(final)
        finally:
            if self.lease is not None:
                if self.lease.holding:   # the next session need not wait for the pool to notice
                    grant, slot = self.lease.grant, self.lease.slot
                    self.lease.release(self.executor.pacer.busy, want=False)
                    self.lease.finished(grant, slot)   # synchronized above, or broken
                self.lease.close()
            # (parked: the replies sent last still reach the client, which reads them before
            # it asks where its session went)
            self.links.close(linger_ms=10_000 if self.parked else 0)
            self.control.close()
            self.ctx.destroy(linger=0)


def _peek_header(frames: list) -> Any:
    """The first msgpack object of a message's first frame, or None."""
    if not frames:
        return None
    try:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=True, max_buffer_size=len(frames[0]) + 1)
        unpacker.feed(frames[0])
        return unpacker.unpack()
    except Exception:  # not ours to judge here: the batch path reports malformed input
        return None


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"b": None, "m": packb([]), "v": [], "d": [], "w": [], "x": 0, "s": 0,
            "e": [None, error_name(exc), str(exc), None]}

