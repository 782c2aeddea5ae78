"""A session's part in stretch replay's fast path: runs answered from held stretches'
templates, the batches that stand for them, and where a call ends a stretch.

A mixin of :class:`kernelproxy.session.Session` (reading its lock, its queue ``_ops``, its
stretch replay ``stretches``, the run under way ``_run`` and ``_may_start``, its loop cuts
``_cuts``, and its sending): a stretch's first op begun from the compiled operator's check
(``_start_operator``), a run's sync point sent as one replay batch (``_send_run``,
``_replay_batch``), a run that cannot go on written out as the ops it stood for
(``_fall_back``), and what ``Session.submit_arrays`` asks of the stretch under way. The
runs themselves are kernelproxy/template_run.py's; the templates, kernelproxy/
stretch_templates.py's.
"""

from __future__ import annotations

from typing import Any

from gpu_backend.protocol import codec

from . import early_replay
from .held_ops import start as _start_held
from .interrupts import interrupts_deferred as _interrupts_deferred
from .template_run import TemplateRun

__all__ = ["SessionTemplates"]

#: a batch's header packed as ``codec.packb`` packs it (a packer of its own: one call less
#: on a held loop's every replay), each thread's own (sessions used from several threads:
#: codec.thread_packs)
_pack_header = codec.thread_packs()


class SessionTemplates:
    """Session's fast path (a mixin: see the module's docstring)."""

    def _stretch_has_ops(self) -> bool:
        """Whether the stretch under way has an op before the one at hand: a run answered
        from a template has taken one (it begins at its first), or its key has one. A call
        of several results that opens a stretch cuts nothing: held stretches are cut so
        that the ops before the call stay a stretch its graphs serve, and there are none
        (a held loop's last sighting makes ``cut_here`` true with none queued yet, which
        made the call a stretch of its own)."""
        return self._run is not None or (self.stretches is not None
                                         and self.stretches.current.ops > 0)

    def _holds_several(self) -> bool:
        """Whether the stretch under way holds a call of several results already: the run
        answered from a template has taken one, or its key has one. Never where such
        stretches are not held (``GPUWB_SEVERAL_HELD=0``: the key has none then)."""
        run = self._run
        if run is not None:
            first = run.template.first_several
            return first is not None and first < run.i
        return self.stretches is not None and self.stretches.current.several

    def _stretch_may_be_held(self) -> bool:
        """Whether the stretch queued so far is answered from a template, or its key is held
        or may yet be: ended before a large upload or a call of several results, it repeats."""
        return self._run is not None or (self.stretches is not None and self.stretches.cut_here())

    def _start_operator(self, name: str, a: Any, b: Any, label: str) -> Any:
        """A stretch's first op, Python's operator *name* on the arrays or scalars *a*, *b*
        (an array among them), from the compiled operator where the session has no run
        (kernelproxy/_held_ops.c): its result array where the template that :meth:`submit`'s
        start would try first takes it (``held_ops.start``, its check in C), the run then
        under way; else None, nothing of the attempt left, and the Python method issues the
        op as ever (the reference: issue.call, submit, StretchReplay.start_run). The same
        run, without those layers: the first op of a loop's every iteration."""
        if not self._may_start:
            return None
        with self._lock:
            stretches = self.stretches
            heartbeat = self.heartbeat
            # (anything submit would do first, or look at, goes the reference's way)
            if (self._run is not None or not self._may_start or self._late_frees
                    or self._cuts.cut_at is not None or self._error is not None or self.blocking
                    or stretches is None or self.closed or self._ended or heartbeat.lost
                    or heartbeat.moves > self.moves or not self.settings.compiled):
                return None
            run = stretches.operator_run(self, name, self._seq + 1)
            if run is None:
                return None
            self._may_start = False
            array = _start_held(run, self, name, a, b, label)
            if array is None:
                self._may_start = True
                return None
            stretches.started(run)
            self._run = run
            return array

    def _stretch_begins(self) -> None:
        """A sync point has ended a stretch: the next may be a held stretch's, answered from
        its template (kernelproxy/stretch_templates.py) from its first op on."""
        stretches = self.stretches
        if stretches is not None:   # (no run answered from a template now)
            stretches.settle_stale()
        self._may_start = stretches is not None and bool(stretches.templates.held)
        self.stretch_frees.clear()
        if not self._cuts.cutting:   # (a sync point, not a loop's cut: the cutting ends)
            self._cuts.stop()

    def _send_run(self, run: TemplateRun, entry: list, sync_device: bool) -> None:
        """A run answered from its template reached its sync point: one batch, the replay
        entry and the client's frees, stands for its ops."""
        __tracebackhide__ = True  # IPython shows the user's frames, not ours
        self._run = None
        self._check_open()
        plan = run.template.early_plan
        if plan is not None:   # (what changes between runs: when the next goes early)
            if plan.lane:   # (whole for the lane's pushes: kernelproxy/early_replay.py)
                plan.sent_whole()
            run.template.early_at = plan.observe(entry[2], entry[3])
        self._replay_batch(run, entry, self._seq, run.free_records(), sync_device)
        self._follow_broken()
        self._eager_check = self._eager_at
        self._stretch_begins()

    def _replay_batch(self, run: TemplateRun, entry: list, last: int, records: list,
                      sync_device: bool, early: bool = False) -> int:
        """Send the batch that stands for *run*'s ops, *run.first* to *last*: its replay
        entry (header ``T``; *early*: ``S``, sent before the run's end: kernelproxy/
        early_replay.py), the frees made before its first op (header ``F``) and *records*
        (the frees in its course) after it; counted in flight. Its number."""
        with _interrupts_deferred:
            self._ops = []   # (only the frees before its first op: stretch_frees, header F)
            first = run.first
            header = self._batch_header(first, last)
            header["T"] = entry
            if early:
                header["S"] = 1
            if self.stretch_frees:   # (dropped before its first op: freed before the replay)
                header["F"] = list(self.stretch_frees)
            self.stretches.replayed(header, run.template)
            trailing = self.trailing
            asked = trailing.ask(run.template, entry[2], entry[4])
            if asked:   # (the arrays its loop downloads next, sent with its reply)
                header["G"] = asked
            self._header_ends(header, sync_device)
            packed = _pack_header(header)
            frames = [packed + b"".join(records) if records else packed]
            if run.payload:   # (its uploads' data, in their order: HeldStretch.uploads)
                frames.extend(run.payload)
            batch = self._batch
            trailing.sent(run.template, entry[2], entry[4], batch, None if early else last, asked)
            self._in_flight.append((batch, first, last))
            self._sent[batch] = frames
            self._run_origins[batch] = run
            self._send(frames, False)
        return batch

    def _fall_back(self, at_op: bool = False) -> None:
        """The run under way cannot go on from its template: its ops so far join the queue
        as the records the client would have sent, its frees where they came, each op's
        origin kept; the op at hand then goes as ever. *at_op*: an op not the template's is
        at hand; where the run is a loop's piece answered whole, the piece ends instead
        (kernelproxy/loop_cuts.py) and the op begins the next."""
        run = self._run
        if self._cuts.cut_at is not None:
            if at_op and run.i == len(run.template.ops):
                self._cuts.cut()   # (a loop's piece answered whole from its template: it ends)
                return
            self._cuts.stop()   # (a piece missed its template: the loop is looked for anew)
        self._run = None
        if run.early is not None:
            early_replay.abandon(self, run)
        records, origins = run.fall_back()
        with _interrupts_deferred:   # (the uploads among the ops and their frames together)
            self._ops.extend(records)
            if run.payload:   # (their data ahead of any queued since)
                self._payload[:0] = run.payload
        origin = self._origin
        for seq, label, filename, line, out in origins:
            origin[seq] = (label, filename, line, out)
