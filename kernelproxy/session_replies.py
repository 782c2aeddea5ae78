"""A session's replies, read in the order its batches went (mixed into
:class:`~kernelproxy.session.Session`): a sync point waits for them (spinning a moment
first, as local CuPy spins through a synchronize, then sleeping), a link that ended is
followed to the session's new worker, the user's stop button cancels what is queued; each
reply brings its batch's values, downloads and new arrays' metadata, replays' news for the
held stretches, warnings shown at the user's lines, and the first failed op's error, which
marks the arrays after it never computed.

It uses the session's ``link``, ``heartbeat``, ``spin_seconds``, its tables of batches in
flight and sent, values, origins and dead arrays, ``meta``, ``stretches``, the wait displays,
and its methods ``cancel``, ``_lose`` and ``_followed``.
"""

from __future__ import annotations

import time
import warnings

import msgpack
import numpy as np

from gpu_backend.protocol import codec
from gpu_backend.protocol.errors import warning_class

from . import early_replay, pushed_replies
from .interrupts import interrupts_deferred as _interrupts_deferred
from .relink import LinkEnded, relink
from .streamed import receive_streamed

__all__ = ["SessionReplies", "mark_dead"]


def mark_dead(dead: dict, out: object, reason: str) -> None:
    """The array(s) an op was to make under *out* (its handle, a list of them for an
    ``api.ARRAYS`` op, None for none) never will: each handle's reads raise *reason*."""
    if type(out) is int:
        dead[out] = reason
    elif type(out) is list:
        for hid in out:
            dead[hid] = reason

#: how a reply is read (a value may be a map keyed by numbers: value_indices); made once,
#: not at every reply
_REPLY_OPTIONS = {**codec.UNPACK_OPTIONS, "strict_map_key": False}
#: a reply's metadata (``m``) of no array: nothing to read
_NO_ENTRIES = msgpack.packb([])


class SessionReplies:
    """The replies of a session's batches, read (the module's doc)."""

    def _drain(self, timeout: float) -> None:
        """Read the replies that are already here (or arrive within *timeout*)."""
        try:
            while self._in_flight and self.link.poll(int(timeout * 1000)):
                self._read_reply()
                timeout = 0
        except LinkEnded as exc:
            relink(self, str(exc))

    def _wait_all(self) -> None:
        self._wait_through(None)

    def _wait_all_but(self, most: int) -> None:
        """Read replies until at most *most* batches are unanswered, the oldest first (batches
        sent without reading a reply: a loop's pieces, a call of several results's own)."""
        in_flight = self._in_flight
        if len(in_flight) > most:
            self._wait_through(in_flight[-most - 1][2])

    def _wait_through(self, seq: int | None) -> None:
        """Read replies until every batch is answered, or (with *seq*) the one carrying op *seq*."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        poll = self.link.poll
        pause = self.spin_pause
        spin_until = time.perf_counter() + self.spin_seconds
        in_flight = self._in_flight
        while in_flight and (seq is None or in_flight[0][1] <= seq):
            if self._pushes.early and pushed_replies.use_early(self):
                continue   # (a push that came before its batch went: read or dropped now)
            try:
                if poll(0):
                    self._read_reply()
                    continue
            except LinkEnded as exc:   # (moved: the batches go to the new worker)
                relink(self, str(exc))
                poll = self.link.poll
                continue
            if time.perf_counter() < spin_until:
                # a small op's answer is usually microseconds away: don't sleep yet, but
                # yield: a worker that shares this CPU gets it at once (protocol/spinning.py)
                pause()
                continue
            else:
                try:
                    ready = poll(200)
                    if ready:
                        self._read_reply()
                        continue
                except KeyboardInterrupt:  # the user's stop button: drop the queued work
                    self.cancel()
                    raise
                except LinkEnded as exc:
                    relink(self, str(exc))
                    poll = self.link.poll
                    continue
                if self.heartbeat.lost:
                    self._lose(self.heartbeat.lost)
                elif self._followed():
                    poll = self.link.poll
                elif self._waits:   # (a display due after its first second shows without
                    try:                # waiting for a notice)
                        self._waits.refresh()
                    except KeyboardInterrupt:   # (the stop button, as in the poll above)
                        self.cancel()
                        raise

    def _read_reply(self) -> None:
        with _interrupts_deferred:
            self._take_reply()

    def _take_reply(self) -> None:
        frames = self.link.recv()
        try:   # (a value may be a map keyed by numbers: value_indices; the pool is trusted so far)
            reply = msgpack.unpackb(frames[0].bytes, ext_hook=self._reply_hook, **_REPLY_OPTIONS)
        except Exception as exc:   # never leave the replies out of step with their batches
            self._lose(f"the pool sent a reply this client cannot read ({type(exc).__name__}: "
                       f"{exc}); the session is closed")
        if "notice" in reply:   # what the batch waits for, not its reply: shown, then wait on
            self._waits.noticed(reply)
            return
        pushes = self._pushes
        if (pushes.unconfirmed or pushes.absorbing) and pushed_replies.settled(self, reply):
            return   # (a batch a pushed reply answered: kernelproxy/pushed_replies.py)
        if "P" in reply and not pushed_replies.take(self, reply, frames):
            return   # (pushed before its batch went, or for a batch that went otherwise)
        self._apply_reply(reply, frames)

    def _failed(self, reply: dict) -> None:
        """What a reply says went wrong: the worker ended (``z``), and the first failed op's
        error (``e``), raised at the next sync point, the arrays of the ops after it marked
        never computed. (Also a reply that comes late, for a batch a pushed reply answered:
        kernelproxy/pushed_replies.py.)"""
        if reply.get("z"):  # the worker has ended (its device context broke, its pool died): why
            self._ended = f"the session's worker has ended: {reply['z']}"
        error = reply.get("e")
        if error is None or self._error is not None:
            return
        self._error = error
        self._resume = error[0] if type(error[0]) is int else self._resume
        origin = self._origin
        failed = origin.get(error[0])
        reason = (f"this array was never computed: {failed[0]} (line {failed[2]} of "
                  f"{failed[1]}) failed before it" if failed else
                  "this array was never computed: an earlier op failed")
        for seq, (_l, _f, _n, out) in origin.items():
            if seq > (error[0] or 0):
                mark_dead(self._dead, out, reason)

    def _apply_reply(self, reply: dict, frames: list) -> None:
        """The reply of the oldest batch in flight, read."""
        if self._waits:   # (the batch's reply: any wait still shown is over)
            self._waits.end()
        batch, first, last = self._in_flight.popleft()
        self._sent.pop(batch, None)
        if self._streamed:
            self._streamed.pop(batch, None)
        if self._early is not None and early_replay.discarded(self, batch, reply):
            return   # (an early replay undone: nothing of it reaches the user)
        get = reply.get
        if self.stretches is not None:
            self.stretches.answered(batch, get("h"), get("f"), get("hm"), get("hs"))
        run = self._run_origins.pop(batch, None) if self._run_origins else None
        if run is not None and get("L") and self.settings.lane_over_early:
            early_replay.lane_would_push(run.template)   # (its runs go whole: pushed)
        error = get("e")
        if run is not None and (error is not None or reply["w"] or get("c")):
            self._origin.update(run.origins())   # (made only where a reply needs them)
            run = None
        took = get("t")
        if took:
            self.worker_seconds += took
        took = get("g")
        if took:
            self.device_seconds += took
        if get("b") != batch:
            self._lose(f"reply for batch {reply.get('b')} while waiting for batch {batch}")
        entries = reply["m"]
        if entries != _NO_ENTRIES:   # (a held loop's replay, its results' metadata known: none)
            self.meta.arrived(msgpack.unpackb(entries))
        for seq, value in reply["v"]:
            self._values[seq] = value
        downloads = reply["d"]
        if downloads:
            wire_dtype = codec.wire_dtype
            payload = iter(frames[1:])
            for entry in downloads:
                seq, dt, shape = entry[:3]
                dt = wire_dtype(dt)
                if len(entry) > 3:
                    host = receive_streamed(self, dt, shape, entry[3])
                else:
                    host = np.frombuffer(next(payload).buffer, dtype=dt).reshape(shape)
                if seq < 0:   # (an array the replay's header G asked for: -its handle)
                    self.trailing.arrived(batch, -seq, host)
                else:
                    self._values[seq] = host
        for seq, category, text, *module in reply["w"]:
            # at the user's call; of CuPy's module where the pool's CuPy warned from its own
            # code, so that filters by module match as they would locally
            _label, filename, line, _out = self._origin.get(seq, ("", "<remote>", 0, None))
            if module:   # (module=None is not "absent" to warn_explicit's C implementation)
                warnings.warn_explicit(text, warning_class(category), filename, line, module=module[0])
            else:
                warnings.warn_explicit(text, warning_class(category), filename, line)
        if reply.get("c"):  # cancelled: ops after the first `x` of this batch never ran
            reason = "this array was never computed: its op was cancelled by an interrupt"
            for seq in range(first + (reply.get("x") or 0), last + 1):
                entry = self._origin.get(seq)
                if entry is not None:
                    mark_dead(self._dead, entry[3], reason)
        self._failed(reply)
        origin = self._origin
        if run is None and (error is None or error[0] is None or error[0] > last):
            for seq in range(first, last + 1):   # (a run's ops have none: nothing to drop)
                origin.pop(seq, None)
