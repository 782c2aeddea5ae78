"""The op loop: a batch's records run one by one on the session's device.

Mixed into :class:`~gpu_backend.worker.executor.Executor`, which holds what a batch needs
around it (its header, its reply, the session's poison, the stretches it replays) and
calls :meth:`OpLoop._run_ops` for the records. Here: each record decoded only when its turn
comes (an op may name the arrays the ops before it made), the common op run inline, every
other op by its kind (:meth:`OpLoop._dispatch`, :meth:`OpLoop.call`), pacing and cancel
looks between ops, an op out of memory beside held graphs tried once more, and the first
op that fails ending the batch.

What it uses of the executor: ``device``, ``table``, ``pacer``, ``splitter``, ``replay``,
``make_room``, ``cancelled``, ``more_work``, ``seq``, ``_batch`` (the batch's bytes), and its
methods ``poison``, ``record_error``, ``info``, ``_free_only`` and ``_free_rest``.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Iterator

import msgpack

from ..protocol import api
from ..protocol import messages as m
from ..protocol.errors import NotAllowedError, ProtocolError
from .batch_results import BatchResults
from .cuda_calls import run_cuda_call
from .error_text import refusal
from .objects import run_object_call
from .splitting import Interrupted
from .transfers import run_download, run_upload

__all__ = ["OpLoop", "CANCEL_CHECK_SECONDS"]

_ARRAY, _OBJECT, _OPERATOR, _METHOD = api.ARRAY, api.OBJECT, m.KIND_OPERATOR, m.KIND_METHOD
_ARRAYS = api.ARRAYS
_FUNCTION = m.KIND_FUNCTION
#: Functions the device checks before running (a creation call that may not fit).
_CHECKED_CREATION = api.CREATION_WITH_SHAPE
#: Ops tried once more after an out-of-memory error that dropping held graphs may cure
#: (the ones :meth:`OpLoop.call` runs: they allocate, then launch)
_RETRIED = frozenset((m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION, m.KIND_ATTRIBUTE))
#: Between ops that take longer than this, the worker looks for a cancel request.
CANCEL_CHECK_SECONDS = 0.005


class OpLoop:
    """A batch's records run in order (the module's doc), on the executor it is mixed into."""

    def _run_ops(self, unpacker, payload: Iterator, results: BatchResults) -> tuple:
        """Run the batch's records in order; returns (ops run, error entry, cancelled).

        The op loop (:meth:`_loop`) runs until the batch ends, is cancelled or an op fails.
        An op out of memory beside held graphs runs once more with them dropped
        (:meth:`_retry`), and the loop goes on; any other error ends the batch and poisons
        the session (:meth:`_failed`). A cancelled batch runs no more ops, but honours the
        frees among its records."""
        loop = _Loop(self.pacer.countdown, perf_counter())
        while True:
            try:
                cancelled = self._loop(unpacker, payload, results, loop)
            except Interrupted:   # cancelled between two pieces of a split op: not run
                cancelled = True
            except Exception as exc:  # the op's own error, reported to the client
                error = self._retry(loop, exc, results)
                if error is not None:
                    return loop.executed, self._failed(loop, error), False
                if loop.countdown:
                    continue   # the op ran: on with the batch
                cancelled = True   # interrupted while waiting for the device
            if cancelled:
                self._free_only(unpacker)   # the rest of the batch is not run; its frees are
            return loop.executed, None, cancelled

    def _loop(self, unpacker, payload: Iterator, results: BatchResults, loop: _Loop) -> bool:
        """The op loop: decode each record as its turn comes (an op may name the arrays the
        ops before it made), run it, pace, look for a cancel. Runs from where *loop* stands
        until the batch ends (False) or is cancelled (True); an op's error propagates, and
        *loop* then says which op it was. The common op, an operator, method or function
        whose result is an array, runs inline, its array result's metadata left to the
        batch's end (``results.fresh``); every other op goes through :meth:`_dispatch`.

        This is the worker's hot loop (a few microseconds an op matter: see
        benchmarks/worker_micro.py): everything it uses per op is a local, and the common
        op makes no call of the executor's own (a call costs ~60 ns here)."""
        executed, countdown, checked = loop.executed, loop.countdown, loop.checked
        unpack, tell, end = unpacker.unpack, unpacker.tell, len(self._batch)
        pacer = self.pacer
        pace, cancel_asked = pacer.after_ops, self.cancelled
        at_read, release_before_read = pacer.release_at_read, pacer.release_before_read
        operators, methods, functions = self.device.operators, self.device.methods, self.device.functions
        array_type = self.device.array_type
        put, free = self.table.put, self.table.free
        fresh = results.fresh
        splitter = self.splitter
        seq = at = kind = want = out = name = target = args = kwargs = None
        try:
            while True:
                # -- decoding a record: a free (a handle) or an op (its head, its arguments)
                seq = None  # an error before the next op's seq is known names no op
                at = tell()  # (after OutOfData, tell() counts a partial record's bytes)
                try:
                    head = unpack()
                except msgpack.OutOfData:
                    if at != end:
                        raise ProtocolError("truncated op record") from None
                    return False  # the end of the batch
                except ValueError as exc:  # msgpack's errors and CodecError
                    raise ProtocolError(f"undecodable op record: {exc}") from None
                if type(head) is int:  # the client dropped this array here, in op order
                    free(head)
                    continue
                if type(head) is not list or len(head) != 5 or type(head[0]) is not int:
                    raise ProtocolError("malformed op record")
                seq, kind, want, out, name = head
                self.seq = seq
                try:
                    body = unpack()  # resolves handles now, after the ops before it ran
                except msgpack.OutOfData:
                    raise ProtocolError("truncated op record") from None
                except ValueError as exc:
                    raise ProtocolError(f"undecodable op arguments: {exc}") from None
                if type(body) is not list or len(body) != 3:
                    raise ProtocolError("malformed op arguments")
                target, args, kwargs = body
                if type(args) is not list or type(kwargs) is not dict:
                    raise ProtocolError("malformed op arguments")
                if want != _ARRAY and want != _ARRAYS and at_read and tell() == end:
                    # the batch's last op, a read (a value, a download): others may take the
                    # device now and launch as soon as the work it waits for is done
                    release_before_read(executed, self.more_work)
                # -- running it
                if pacer.fresh_due:   # the device was idle or just granted: time starts here
                    pacer.start_segment()
                pacer.began = checked   # (the previous op's end: this op's start, near enough)
                if want == _ARRAY and (kind == _OPERATOR or kind == _METHOD or kind == _FUNCTION):
                    # the common op, inline; anything unusual (a refused name, a method of
                    # something not an array, a creation call the device checks first, a
                    # scalar result) takes the shared path
                    fn = None
                    call_args = args
                    if type(name) is str:
                        if kind == _OPERATOR:
                            fn = operators.get(name)
                        elif kind == _METHOD:
                            if type(target) is array_type:
                                fn = methods.get(name)
                                if fn is not None:   # (args kept: a retry goes through call)
                                    call_args = [target, *args]
                        elif name not in _CHECKED_CREATION:
                            fn = functions.get(name)
                    if fn is None:
                        result = self.call(kind, name, target, args, kwargs)
                    elif splitter is None or name not in splitter.names:
                        result = fn(*call_args, **kwargs)
                    else:   # perhaps long: perhaps in pieces (worker/splitting.py)
                        result = splitter.run(kind, name, fn, call_args, kwargs, executed)
                    if type(result) is array_type:
                        put(out, result)
                        fresh[out] = result
                    else:
                        results.store(seq, want, out, result)
                else:
                    self._dispatch(seq, kind, want, out, name, target, args, kwargs, payload,
                                   results)
                # -- after it: pace, hand the device over if due, look for a cancel
                executed += 1
                countdown -= 1
                if not countdown:  # mark device progress, pace, hand the device over if due
                    pacer.batch_left = end - tell()   # (a batch's tail: Pacer.TAIL_BYTES)
                    countdown = pace(executed, cancel_asked)
                now = perf_counter()
                if not countdown or ((executed & 31 == 0 or now - checked > CANCEL_CHECK_SECONDS)
                                     and cancel_asked()):
                    return True
                checked = now
        finally:   # where the batch stands, for _run_ops (once per run of the loop, not per op)
            loop.executed, loop.countdown, loop.checked, loop.seq, loop.at = \
                executed, countdown, checked, seq, at
            loop.op = (kind, want, out, name, target, args, kwargs)

    def _dispatch(self, seq: int, kind: Any, want: Any, out: Any, name: Any, target: Any,
                  args: list, kwargs: dict, payload: Iterator, results: BatchResults) -> None:
        """The shared path: every op but the inline common one, by its kind."""
        if kind == m.KIND_DOWNLOAD:
            run_download(self, seq, target, results)
            return
        if want == _OBJECT and kind != m.KIND_OBJECT:   # only objects' methods
            raise NotAllowedError("only a remote object's method makes a new object")
        if kind == m.KIND_UPLOAD:
            result = run_upload(self, seq, name, args, payload)
        elif kind == m.KIND_INFO:
            result = self.info()
        elif kind == m.KIND_CUDA:
            result = run_cuda_call(self, name, target, args)
        elif kind == m.KIND_OBJECT:
            result = run_object_call(self, name, target, out, args, kwargs, want)
        else:
            result = self.call(kind, name, target, args, kwargs)
        results.store(seq, want, out, result)

    def _retry(self, loop: _Loop, exc: Exception, results: BatchResults) -> Exception | None:
        """The op *loop* stopped at raised *exc*. Out of memory while held stretches' graphs
        keep memory, the graphs are dropped and the op runs once more (through :meth:`call`):
        None if it ran (*loop* counts it, and paces), else the error that stands."""
        seq = loop.seq
        kind, want, out, name, target, args, kwargs = loop.op
        # (a malformed record's kind may be any value: a str first)
        if seq is None or type(kind) is not str or kind not in _RETRIED \
                or not (self.replay.drop_graphs_for(exc)
                        or (self.make_room is not None and self.make_room(exc))):
            return exc
        try:
            results.store(seq, want, out, self.call(kind, name, target, args, kwargs))
        except Exception as again:
            return again
        loop.executed += 1
        loop.countdown -= 1
        if not loop.countdown:   # (0 again: interrupted while waiting for the device)
            loop.countdown = self.pacer.after_ops(loop.executed, self.cancelled)
        loop.checked = perf_counter()
        return None

    def _failed(self, loop: _Loop, exc: Exception) -> list:
        """The batch ends at the op *loop* stopped at, with *exc*: the session is poisoned
        from that op on (the frees later in the batch still honoured); its error entry."""
        if loop.seq is not None:  # an error that names no op cannot be acknowledged: no poison
            self.poison(loop.seq)
            self._free_rest(loop.at)
        return self.record_error(loop.seq, exc)

    def call(self, kind: str, name: Any, target: Any, args: list, kwargs: dict) -> Any:
        """An operator's, function's, method's or attribute's op through the general
        dispatch: its name looked up on the allow-list, a creation call checked against the
        session's memory first. (The op loop's inline path skips this for the common op;
        stretch replay runs every such op of a held stretch through it.)"""
        if kind == m.KIND_FUNCTION:
            fn = self.device.functions.get(name) if type(name) is str else None
            if fn is None:
                raise refusal("function", name, api.FUNCTIONS, self.device.kind)
            self.device.check_allocation(name, args, kwargs)
            return fn(*args, **kwargs)
        if kind == m.KIND_OPERATOR:
            fn = self.device.operators.get(name) if type(name) is str else None
            if fn is None:
                raise NotAllowedError(f"operator {name!r} is not on the pool's allow-list")
            return fn(*args, **kwargs)
        if kind == m.KIND_METHOD:
            fn = self.device.methods.get(name) if type(name) is str else None
            if fn is None:
                raise refusal("method", name, api.METHODS, self.device.kind)
            if not self._is_array(target):
                raise ProtocolError("a method call needs an array handle as its target")
            return fn(target, *args, **kwargs)
        if kind == m.KIND_KERNEL:   # (a user's kernel; a held stretch's graphs capture it)
            return self.device.run_kernel(name, target, args, kwargs)
        if kind == m.KIND_ATTRIBUTE:
            if name not in api.ATTRIBUTES:
                raise NotAllowedError(f"attribute {name!r} is not on the pool's allow-list")
            if not self._is_array(target):
                raise ProtocolError("an attribute needs an array handle as its target")
            if name == "T":
                return target.T
            if name == "real":
                return target.real
            if name == "imag":
                return target.imag
            return target.mT
        raise ProtocolError(f"unknown op kind {kind!r}")


class _Loop:
    """Where a batch's op loop stands: ops run, ops until the pacer's next look, when it
    last looked for a cancel; and, once it stopped at an error, that op's seq, its record's
    offset and its fields (for :meth:`OpLoop._retry` and :meth:`OpLoop._failed`)."""

    __slots__ = ("executed", "countdown", "checked", "seq", "at", "op")

    def __init__(self, countdown: int, checked: float) -> None:
        self.executed = 0
        self.countdown = countdown
        self.checked = checked
        self.seq: int | None = None
        self.at = 0
        self.op: tuple = ()
