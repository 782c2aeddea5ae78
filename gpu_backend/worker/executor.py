"""Run a batch of a client's ops on the session's device.

Called by the worker's socket loop once per incoming batch. Each op is
decoded only when its turn comes, so an op may name arrays created by the
ops before it in the same batch. The first op that fails *poisons* the
session: the rest of that batch and every later batch are skipped (as a
local program would never have run them) until the client, having raised
the error, sends a batch whose ``resume`` field acknowledges it.
"""

from __future__ import annotations

import warnings
from time import perf_counter
from typing import Any, Iterator

import msgpack

from ..devices import Device
from ..protocol import codec
from ..protocol.errors import ProtocolError, error_name, warning_name
from .batch_results import BatchResults
from .draw_journal import DrawJournal
from .error_text import asked_of, message_of
from .grants import out_of_memory_text
from .handles import HandleTable
from .op_loop import OpLoop
from .pacing import Pacer
from .phases import NO_PHASES, PhaseRecorder
from .result_meta import pack_metas
from .splitting import Splitter
from .stretch_replay import StretchReplay
from .stretches import HeldStretches
from .transfers import check_prefetch, prefetch_downloads
from .user_graphs import UserGraphs

__all__ = ["Executor"]

#: the one type a list of handles holds
_INT = {int}

def library_module(filename: str) -> str | None:
    """The module of CuPy's (``cupy.random._generator``) that a warning is attributed to,
    from its file, so that the client's filters see the module a local warning would
    carry (``ignore:...:FutureWarning:cupy``); None where the warning is attributed to
    anything else (the worker's own frames stand for the user's call)."""
    parts = filename.replace("\\", "/").split("/")
    for top in ("cupyx", "cupy"):
        if top in parts[:-1]:
            start = len(parts) - 1 - parts[::-1].index(top)
            dotted = [part for part in parts[start:] if part]
            dotted[-1] = dotted[-1].rsplit(".", 1)[0]
            if dotted[-1] == "__init__":
                dotted.pop()
            return ".".join(dotted)
    return None


class Executor(OpLoop):
    """A session's ops, run on its device batch by batch (the module's doc).

    What stretch replay (worker/stretch_replay.py, worker/graph_replay.py) uses of it, and
    nothing else: :meth:`run_records` (records run as a batch's are), :meth:`call` (one
    op's general dispatch), :meth:`record_error` and :meth:`poison` (an op's error, as the
    op loop reports it), :attr:`seq` (the op its warnings name), and the public fields
    ``device``, ``table`` and ``pacer``. A batch's results are one :class:`BatchResults`,
    made by :meth:`run_batch` and handed to whatever runs its ops."""

    def __init__(self, device: Device, table: HandleTable) -> None:
        self.device = device
        self.table = table
        self.poisoned_at: int | None = None
        #: the batch whose op failed (an early replay's error is forgotten if it is undone)
        self.poisoned_by: Any = None
        self._batch_no: Any = None   # the batch under way's number (header b)
        #: whether the last batch was its header alone: only then is the next one tried as
        #: such first (open_batch), so that a session whose batches carry records never
        #: pays a failed attempt (an exception) at each of them
        self._header_alone = False
        self.memory_limit: int | None = None
        #: a lower limit the session set on its own memory pool (``MemoryPool.set_limit``)
        self.user_limit: int | None = None
        #: set when a fault destroyed the device context: the worker must end
        self.fatal: str | None = None
        self.ops_run = 0
        #: downloads sent with a replay's reply, before the client asked (header G)
        self.prefetched = 0
        self.op_errors = 0   # ops that raised (their errors went to the client)
        self.op_ooms = 0     # of them, out of device memory (the Lab's out-of-memory state)
        #: wall seconds its batches took from their start to their last op's launch (or the
        #: sync): with the pacer's ``waited``, the share of its work's time spent waiting for
        #: other users' turns, as the user sees it (issue 51)
        self.worked = 0.0
        #: the op running now: its warnings name it, and so does a fault the batch's
        #: closing synchronize finds (set by whatever runs the op, replay's eager ops too)
        self.seq: Any = None
        self._warnings: list[list] = []
        self._hook = codec.ext_hook_for(table.get, table.view_at)
        #: set by the socket loop: ``receive_chunk(seq, index)`` returns the next
        #: chunk of a streamed upload as a buffer (see messages.STREAM_CHUNK_BYTES)
        self.receive_chunk: Any = None
        #: set by the socket loop: whether the client cancelled the current batch
        self.cancelled: Any = lambda: False
        #: arrays whose downloads stream after the current batch's reply
        self.streams: list = []
        #: downloads larger than this stream in chunks even below the device's chunk size
        #: (a client with a staging ring: worker/staged.py STAGED_DOWNLOAD_BYTES); None: at
        #: the device's chunk size
        self.stream_from: int | None = None
        #: measures device time; under a paced policy also holds the device lease
        self.pacer = Pacer(device)
        #: under a paced policy: long ops cut into pieces the pacer hands over between
        self.splitter: Splitter | None = None
        #: set by the socket loop: whether the client has more batches waiting (fifo hand-over)
        self.more_work: Any = lambda: False
        self.bytes_in = 0
        self.bytes_out = 0
        self.peak_memory = 0
        self._ended: int | None = None   # ops of the batch whose after_reply() is due
        self._launched = True   # whether that batch was the pacer's (not answered from ahead)
        self.began_at = 0.0     # when the last batch began (a client's gap ends there: run_ahead)
        #: where the worker's phases are told (worker/phases.py; the default records nothing)
        self.phases: PhaseRecorder = NO_PHASES
        self._is_array = device.is_array
        #: the stretches the client offered and the worker holds (worker/stretches.py), and
        #: their replay (worker/stretch_replay.py), through graphs where the device has them
        self.stretches = HeldStretches()
        self.replay = StretchReplay(self, self.stretches)
        #: the seeds and draws of the session's random generators, so that a replay run
        #: ahead may draw and be undone exactly (worker/draw_journal.py)
        self.draws = DrawJournal(device)
        #: on a GPU: asks the pool to swap idle sessions of this device out when an op ran
        #: out of device memory (the worker's server sets it; worker/swap.py, "pressure")
        self.make_room: Any = None
        #: the client's own CUDA graphs, CuPy's graph API (worker/user_graphs.py)
        self.user_graphs = UserGraphs(self)
        warnings.showwarning = self._capture_warning
        warnings.simplefilter("always")  # the client's own filters decide what the user sees

    def _capture_warning(self, message, category, filename, lineno, file=None, line=None):
        entry = [self.seq, warning_name(category), str(message)]
        module = library_module(filename)
        if module:
            entry.append(module)
        self._warnings.append(entry)

    # ------------------------------------------------------------------ batch
    def open_batch(self, body: bytes) -> tuple[Any, Any]:
        """Decode a batch's header; its records stay in the unpacker, decoded as they run.

        A small batch that is its header alone (a replay of a held stretch with no frees
        after it, a cancel, a close) is decoded by ``msgpack.unpackb``, its records a
        :class:`_NoRecords`: making an Unpacker clears its 40 KiB decoding stack, ~45 000
        instructions, a tenth of a replayed message's cost in the worker. It is tried
        only after a batch that was its header alone (a held loop's replays come in a
        row; an eager session's batches, which carry records, would each pay a failed
        attempt, ~1.7 us). Anything else, a malformed header included, takes the Unpacker
        as before (the same errors)."""
        self._batch = body
        if self._header_alone and len(body) <= _HEADER_ALONE_BYTES:
            try:
                return (msgpack.unpackb(body, ext_hook=self._hook, **codec.UNPACK_OPTIONS),
                        _NoRecords(len(body)))
            except Exception:   # records follow (ExtraData), or it is malformed: as before
                self._header_alone = False
        unpacker = msgpack.Unpacker(
            ext_hook=self._hook, max_buffer_size=max(len(body), 1 << 16), **codec.UNPACK_OPTIONS
        )
        unpacker.feed(body)
        try:
            header = unpacker.unpack()
        except msgpack.OutOfData:
            raise ProtocolError("empty or truncated batch") from None
        except ValueError as exc:  # msgpack's errors and CodecError
            raise ProtocolError(f"undecodable batch header: {exc}") from None
        self._header_alone = unpacker.tell() == len(body)
        return header, unpacker

    def run_batch(self, header: dict, ops: msgpack.Unpacker, payload: list,
                  cancelled: bool = False) -> tuple[dict, list]:
        """Execute one batch; returns the reply header and its payload frames."""
        started = self.began_at = perf_counter()
        replay = self.replay
        self._batch_no = header.get("b")
        entry = header.get("T")
        prefetch = header.get("G") if entry is not None else None   # (ignored without T)
        if prefetch is not None:   # (a malformed list fails the batch before anything is done)
            check_prefetch(prefetch)
        if "A" in header:   # an early replay the client's run did not match: undone first
            self._undo_early(header["A"])
        if "D" in header:   # stretches the client let go (a malformed list fails the batch)
            replay.drop(header["D"])
        resume = header.get("r")
        if self.poisoned_at is not None and type(resume) is int and resume >= self.poisoned_at:
            self.poisoned_at = None
        count = header.get("n", 0)
        results = BatchResults(self.table)
        error = None
        executed = 0
        timer = self.device.start_timer() if header.get("g") else None
        # a replay answered from the one run ahead launches nothing: alone (nobody paced
        # against this session) or free-running beside others (share), it needs no batch of
        # the pacer's (issue 50: "a lone session pays for no pacing it does not need"); its
        # work was paced and charged when it ran
        answered = replay.answerable(entry, header.get("S") == 1) \
            if entry is not None and self.poisoned_at is None and not cancelled \
            and self.pacer.answers_unlaunched(replay.ahead.beside) else None
        self._launched = answered is None
        if answered is None and self.poisoned_at is None and not cancelled \
                and type(count) is int and count > 0 and not self.pacer.begin_batch(self.cancelled):
            cancelled = True   # cancelled (or orphaned) while waiting for the device
        phases = self.phases
        phases.mark("begun")   # the pacer's begin_batch (and the lease, if any)
        held = None
        graphed = False   # (a replay the worker skipped, cancelled or re-ran from its records)
        if self.poisoned_at is None and not cancelled:
            try:
                if entry is not None:
                    self._free_first(header.get("F"))
                    executed, error, cancelled, graphed = replay.run(
                        entry, iter(payload), results, header.get("S") == 1, answered)
                    # (what it read, for a run ahead whose parameters are those values:
                    # worker/fed_params.py; the raw entry's first seq names it)
                    replay.ahead.fed.note(entry[1] if type(entry) is list and len(entry) > 1 else None,
                                          results.values if error is None and not cancelled else None)
                    self._free_only(ops)   # (the client's frees of the stretch, after it)
                    if prefetch and error is None and not cancelled:
                        self.prefetched += prefetch_downloads(self, prefetch, results)
                else:   # (a batch that split an op is not held: its graph would run the op whole)
                    replay.drop_ahead()   # (it may change what a replay run ahead read)
                    touched = self.splitter.touched if self.splitter is not None else 0
                    offered = header.get("O")
                    offer = replay.read_offer(self._batch) if offered is not None else None
                    executed, error, cancelled = self._run_ops(ops, iter(payload), results)
                    if offered is not None and error is None and not cancelled and executed == count \
                            and (self.splitter is None or self.splitter.touched == touched):
                        held = replay.keep(offered, offer, executed, results)
                self.ops_run += executed
                results.finish()
                self._ended = executed
                phases.mark("ops")
                if header.get("y") and error is None:
                    try:
                        self.device.synchronize()
                    except Exception as exc:  # an asynchronous fault of an op in this batch
                        self.poison(self.seq)
                        error = self.record_error(self.seq, exc)
                self.pacer.ended = perf_counter()   # the device waits for the host from here
            finally:   # a read that began with the device handed over: the next holder may go
                self.pacer.pass_baton()
        else:
            self._skip_records(header, ops)
        self.worked += perf_counter() - started
        reply = {
            "b": header.get("b"),
            "m": pack_metas(results.metas),
            "v": results.values,
            "d": results.downloads,
            "e": error,
            "w": self._warnings,
            "x": executed,
            "s": max(0, count - executed) if type(count) is int else 0,
        }
        if cancelled:
            reply["c"] = 1
        if held is not None:
            reply["h"], reply["hm"] = offered, held
            if replay.early_safe(offered):
                reply["hs"] = 1
        if entry is not None and not graphed:
            reply["f"] = 2 if replay.paced_now else 1
        if timer is not None and error is None:
            reply["g"] = self.device.stop_timer(timer)
        if self.fatal:
            reply["z"] = f"a device fault ({self.fatal})"
        self._warnings = []
        return reply, results.out_frames

    def unrun_batch(self, header: dict, ops: Any, exc: BaseException) -> dict:
        """The reply to a batch that could not start (its session's arrays could not come
        back from swap, worker/swap.py): its frees applied, none of its ops run, *exc* the
        batch's error (no op's: the client marks every array of the batch never computed,
        and the session goes on)."""
        if "A" in header:
            self._undo_early(header["A"])
        if "D" in header:
            self.replay.drop(header["D"])
        self.replay.drop_ahead()
        self._skip_records(header, ops)
        count = header.get("n", 0)
        return {"b": header.get("b"), "m": pack_metas([]), "v": [], "d": [],
                "e": self.record_error(None, exc), "w": [], "x": 0,
                "s": count if type(count) is int else 0}

    def _skip_records(self, header: dict, ops: Any) -> None:
        """A batch none of whose ops run (skipped after an error, cancelled, or not started):
        its frees are applied, a replay's header frees too, and the replay is skipped."""
        entry = header.get("T")
        self.replay.drop_ahead()
        if entry is not None:
            self._free_first(header.get("F"))
            self.replay.skip(entry, header.get("S") == 1)
        self._free_only(ops)

    def _undo_early(self, undo: Any) -> None:
        """Header ``A``, ``[batch, handles]``: the early replay sent as *batch* did not match
        the client's run (kernelproxy/early_replay.py). Its results go, and an error it met
        is forgotten: the client never saw it, and sends the run's ops again. (Its inputs
        were kept and nothing else was written: StretchReplay.early_safe.)"""
        if type(undo) is not list or len(undo) != 2 or type(undo[0]) is not int \
                or type(undo[1]) is not list or any(type(h) is not int for h in undo[1]):
            raise ProtocolError("an undone early replay is [batch, [result handles]]")
        for hid in undo[1]:
            self.table.free(hid)
        if self.poisoned_at is not None and self.poisoned_by == undo[0]:
            self.poisoned_at = None

    def _free_first(self, handles: Any) -> None:
        """A replay's header ``F``: arrays the client dropped before the stretch's first op,
        freed before it runs (its peak memory is then what the ops alone would have)."""
        if handles is None:
            return
        # (each item's type at once, in C: no generator at every replay)
        if type(handles) is not list or (handles and set(map(type, handles)) != _INT):
            raise ProtocolError("a replay's F lists the handles of arrays to free first")
        for hid in handles:
            self.table.free(hid)

    def run_records(self, body: bytes, payload: Iterator, results: BatchResults) -> tuple:
        """Run *body*, op and free records with no header (a held stretch's, rebuilt as the
        client would have sent them), exactly as a batch's records run; returns (ops run,
        the error entry or None, cancelled)."""
        self._batch = body
        unpacker = msgpack.Unpacker(ext_hook=self._hook, max_buffer_size=max(len(body), 1 << 16),
                                    **codec.UNPACK_OPTIONS)
        unpacker.feed(body)
        return self._run_ops(unpacker, payload, results)

    def after_reply(self) -> None:
        """The batch's bookkeeping that its reply need not wait for, done once the reply is
        sent: the pacer's end-of-batch marker and measurements (CUDA calls that cost several
        microseconds each on some hosts). Pacing loses nothing by it: the next batch is
        launched only after this runs."""
        executed, self._ended = self._ended, None
        if executed is None:
            return
        if self._launched:
            self.pacer.end_batch(executed, self.more_work)
        else:
            self.pacer.end_unlaunched(self.more_work)
        self.phases.mark("end_batch")
        self.replay.after_reply()
        if not self._launched and self.replay.ahead.ahead is None:   # (none run ahead now)
            self.pacer.out_of_work(self.more_work)

    def memory_now(self) -> int:
        """The device memory the session uses now, its peak kept: read once a message,
        before its reply (worker/server.py: memory grown is reported first). A run ahead's
        results count from the next message, or the usage's own read of the peak."""
        used = self.device.memory_used()
        if used > self.peak_memory:
            self.peak_memory = used
        return used

    def poison(self, seq: int) -> None:
        """Op *seq* failed: it and every op after it are skipped, as a local program would
        never have run them, until the client, having raised the error, acknowledges it
        (a batch whose ``r`` is *seq* or later)."""
        self.poisoned_at = seq
        self.poisoned_by = self._batch_no

    def record_error(self, seq: Any, exc: BaseException) -> list:
        """The reply's error entry for *exc*, raised by op *seq* (None: by no op, a malformed
        batch), counted in the session's figures; a CUDA fault that broke the context ends
        the session.
        The session's cuFFT callback blocks are left: the ops after a failed one are not
        run until the client has the error, and a block's exit may be among them."""
        self.device.leave_fft_callbacks()
        if seq is not None:   # an op's own error (a malformed batch names no op)
            self.op_errors += 1
        name, text = error_name(exc), message_of(exc)
        if name == "MemoryError" and self.device.tracks_memory:
            # the NumPy device's memory is the host's: NumPy failing to allocate (past the
            # worker's data limit) is this session's device running out, as on a GPU
            name, text = "OutOfMemoryError", f"Out of memory: {text}"
        if name == "OutOfMemoryError":   # say which budget it met, in the user's terms
            self.op_ooms += seq is not None
        if name == "OutOfMemoryError" and not getattr(exc, "device_full", False):   # (a full
            # device says so itself: the NumPy device's board, worker/swap.py's pressure)
            grant = self.device.grant
            text = out_of_memory_text(asked_of(text), self.device.memory_used(), self.pool_limit(),
                                      grant.refusal if grant is not None else None, grant)
        if name == "CUDAError" and not self.device.healthy():
            self.fatal = text
            text += " (the session's CUDA context is lost: this session has ended, open a new one)"
        return [seq, name, text, None]

    def usage(self) -> dict:
        """Cumulative figures for the pool's accounting (usage reports)."""
        self.pacer.harvest()
        return {"device_s": self.pacer.busy, "ops": self.ops_run, "bytes_in": self.bytes_in,
                "bytes_out": self.bytes_out, "errors": self.op_errors, "oom": self.op_ooms,
                "peak": max(self.peak_memory, self.device.memory_used()),
                "waited_s": round(self.pacer.waited, 6), "worked_s": round(self.worked, 6)}

    def info(self) -> dict:
        """The session's own figures (``%gpu memory``, ``Session.memory_info``)."""
        return {"memory_used": self.device.memory_used(), "memory_limit": self.memory_limit,
                "arrays": len(self.table), "ops": self.ops_run, "prefetched": self.prefetched,
                "device": self.device.info(),
                "stretches": self.replay.figures(), "graphs": self.user_graphs.figures(),
                "split": self.splitter.figures() if self.splitter is not None else None}

    def pool_limit(self) -> int | None:
        """The memory pool's limit as the session sees it: its own, or the pool's."""
        if self.user_limit is not None:
            return self.user_limit
        return self.memory_limit

    def set_pool_limit(self, nbytes: Any) -> None:
        """``MemoryPool.set_limit``: a session may lower its limit (never past the pool's;
        0 or None goes back to the pool's limit)."""
        if nbytes is not None and (type(nbytes) is not int or nbytes < 0):
            raise ValueError("the memory pool's limit is a number of bytes, 0 or more")
        if self.device.grant is not None:
            raise NotImplementedError(
                "set_limit is not available to a session under a user's memory quota: "
                "the quota sets the limit")
        cap = self.memory_limit
        self.user_limit = None if not nbytes else (nbytes if cap is None else min(nbytes, cap))
        limit = self.pool_limit()
        if limit is not None:
            self.device.set_memory_limit(limit)

    def take_streams(self) -> list:
        """Arrays to stream to the client after the reply (a download ends its batch)."""
        streams, self.streams = self.streams, []
        return streams

    def _free_rest(self, at: int) -> None:
        """After the op at offset *at* failed, honour the frees later in its batch."""
        # A fresh unpacker from the op's start: the batch's own may stop mid-record
        # after a decoding error, and this one never resolves a handle.
        rest = msgpack.Unpacker(max_buffer_size=max(len(self._batch), 1 << 16))
        rest.feed(memoryview(self._batch)[at:])
        try:
            rest.skip()  # the failed op's head...
            rest.skip()  # ...and its arguments
        except Exception:  # malformed: nothing after it can be trusted
            return
        self._free_only(rest)

    def _free_only(self, unpacker) -> None:
        """In a skipped batch, still honour the client's frees (never resolving handles)."""
        if type(unpacker) is _NoRecords:   # (none: no OutOfData raised and caught)
            return
        try:
            while True:
                record = unpacker.unpack()
                if type(record) is int:
                    self.table.free(record)
                elif type(record) is list and len(record) == 5:
                    unpacker.skip()  # its arguments: not decoded, so no handle is looked up
        except Exception:  # the end of the batch, or a malformed one: free what we could
            pass

    def pack_reply(self, reply: dict) -> bytes:
        """Encode a reply; a value the codec cannot send becomes the error of its op."""
        try:
            return codec.packb(reply)
        except (TypeError, ValueError, OverflowError):
            pass
        kept = []
        for seq, value in reply["v"]:
            try:
                codec.packb(value)
            except (TypeError, ValueError, OverflowError) as exc:
                # values precede the batch's error, if any: this op failed first
                reply["e"] = [seq, error_name(exc), message_of(exc), None]
                self.poison(seq)
                break
            kept.append([seq, value])
        reply["v"] = kept
        return codec.packb(reply)

#: the largest batch whose header open_batch tries alone first (a larger one has records:
#: unpackb would copy them whole into its ExtraData before the Unpacker decodes them)
_HEADER_ALONE_BYTES = 2048


class _NoRecords:
    """The records of a batch that is its header alone: none. Read as an Unpacker that has
    reached its end is (its position, the batch's length)."""

    __slots__ = ("end",)

    def __init__(self, end: int) -> None:
        self.end = end

    def unpack(self) -> Any:
        raise msgpack.OutOfData

    def skip(self) -> None:
        raise msgpack.OutOfData

    def tell(self) -> int:
        return self.end

    def __iter__(self):
        return iter(())
