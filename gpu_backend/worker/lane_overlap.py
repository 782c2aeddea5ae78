"""Two steps of a device-bound loop on the device at once (issue 50, docs/stretch-replay.md,
"Two steps in flight").

A loop whose step is long device work (n-body, heat2d 2048², a fused loop) is committed
ahead before its reads (worker/server_replies.py, ``_commit_then_read``): step k is
committed, then read — a wait for the device —, its reply pushed, and only then step k + 1
run ahead. From step k's end on the device to step k + 1's launch the device waited for
the worker: the reads' return, the push, and the next run ahead's checks and gathers,
100–250 µs a message on an H200 (run 266: n-body's worker 655 µs a message, 390 of them
waiting for the device). Local CuPy's step is its device time, its Python overlapped.

Here, once step k is committed, step k + 1 is launched *before* step k's reads: the device
goes from one step to the next, and the worker reads step k while k + 1 runs. What that
takes:

- step k's reads come from its read graph's slots (worker/lane_reads.py), and step k + 1's
  read graph copies into other slots (a second read graph, ``plan.read_slots_next``, the
  two taking turns), so that k + 1's copy never overwrites values not yet read;
- the wait is for an event recorded after step k's read graph (``_Ahead.read_mark``), not
  for the stream, which holds k + 1 now;
- step k + 1's reads wait for its message (``_Ahead.deferred``), as a deferred read does;
- a roll-back of step k (its reads failed, or its message never came) drops the run ahead
  made from it, as it always did (Pushes.roll_back: ``drop_ahead``).

Only where nothing else could notice the order: a lone session (the pacer's work in flight
beside others stays one step), one stretch's loop (not stretches taking turns, not one run
when its message comes), no draws (a draw's journal is undone newest first), no eager op
between its graphs, step k's measurement not pending and step k + 1's device time known
(the pacer measures one step at a time), and every read a slot's. ``GPUWB_OVERLAP_STEPS=0``
reads step k before launching k + 1, as before (a diagnostic: the benchmarks' side
``nooverlap``)."""

from __future__ import annotations

from typing import Any

from .lane_plans import LanePlan
from .lane_reads import read_slots

__all__ = ["LaneOverlap"]


class LaneOverlap:
    """The steady lane's two steps in flight, mixed into SteadyLane (its ``x``, ``plan``,
    ``batch_ended``, ``_run_ahead`` and ``_next``): ``overlap`` (``GPUWB_OVERLAP_STEPS``) and ``overlapped``
    (how many steps were launched before the step before them was read, that step's reply
    then pushed: ``steps_overlapped``) are its."""

    def launch_next_first(self, plan: LanePlan, ahead: Any) -> bool:
        """After the plan's message was committed ahead, its run ahead *ahead* unread: the
        plan's next step run ahead now, before *ahead*'s reads (then
        :meth:`after_launched` once they are pushed). Whether it was: where not, nothing
        was done, and the reads, the push and SteadyLane.after_reply go as ever."""
        x = self.x
        if not self.overlap or plan.turn is not None or plan.now or plan.early or plan.eager \
                or plan.held.draws or plan.graph.draws or ahead.measured_from is not None \
                or (plan.reads and ahead.read_slots is None) or not x.pacer.alone_now():
            return False
        if plan.reads and plan.read_slots_next is None:   # (the slots the next step's read
            graphs = x.replay.graphs                          # graph copies into)
            plan.read_slots_next = read_slots(graphs.tools, plan.reads, graphs.array_type)
            if plan.read_slots_next is None:
                return False
        self.batch_ended()
        if not self._run_ahead(plan, overlapping=True):
            return False
        x.phases.mark("lane_overlapped")
        return True

    def after_launched(self, plan: LanePlan) -> None:
        """After the reply of the plan's message, whose next step :meth:`launch_next_first`
        ran ahead: the plan goes on to the message after (SteadyLane.after_reply's end);
        counted here, its step's reply pushed (not one taken back)."""
        self.overlapped += 1
        self._next(plan)
        self.x.phases.mark("lane_next")
        self.plan = plan
