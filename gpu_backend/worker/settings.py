"""A session worker's own settings, read from ``GPUWB_*`` variables once, in its ``main``,
and handed to the parts that use them (nothing under ``worker/`` reads the environment).

All of them are for measuring and testing; the pool's settings that shape how a worker
serves (spin slots, the arbiter, keys) reach it on its command line from
``PoolSettings``. A worker inherits its pool's environment, so a benchmark sets these for
every worker of the pool it starts. Read with the standard library: a warm spare starts
without pydantic's import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

__all__ = ["WorkerSettings", "environ_under_callgrind"]


@dataclass(frozen=True)
class WorkerSettings:
    #: ``GPUWB_WORKER_PHASES=DIR``: time the phases of every message (worker/phases.py) and
    #: write their medians to DIR when the session ends
    phases_dir: str | None = None
    #: ``GPUWB_WORKER_PROFILE=DIR``: a cProfile of the session's serving loop, written to DIR
    profile_dir: str | None = None
    #: ``GPUWB_PACING_TRACE=DIR``: the pacer's segments and grants, written to DIR
    #: (benchmarks/fairness.py, docs/fair-share.md)
    pacing_trace_dir: str | None = None
    #: ``GPUWB_PACING_LEAD_US``: the pacer's lead in seconds (worker/pacing.py LEAD; None:
    #: that default), which benchmarks/fairness.py's ``fair+leadUS`` policies vary
    pacing_lead: float | None = None
    #: ``GPUWB_SHARE_LEAD_US``: a free-running session's lead beside others under the share
    #: policy, in seconds (worker/pacing.py SHARE_LEAD; None: that default), which
    #: benchmarks/fairness.py's ``share+shareleadUS`` policies vary
    share_lead: float | None = None
    #: ``GPUWB_SHARE_NAP_US``: the longest a free-running session under the share policy
    #: sleeps while holding back before it looks at the device again, in seconds
    #: (worker/pacing.py SHARE_NAP; None: that default; 0: as long as its estimate says),
    #: which benchmarks/fairness.py's ``share+napUS`` policies vary
    share_nap: float | None = None
    #: ``GPUWB_SHARE_GRAIN_US``: how much device time a free-running session under the share
    #: policy launches between two markers, in seconds (worker/pacing.py SHARE_GRAIN; None:
    #: that default), which benchmarks/fairness.py's ``share+grainUS`` policies vary
    share_grain: float | None = None
    #: ``GPUWB_SHARE_PRICED``: under the share policy, beside others, a held stretch's
    #: replay is charged its own cost (its least span measured), not its span
    #: (worker/replay_prices.py); ``1`` on, else off
    share_priced: bool = False
    #: ``GPUWB_PACED_KEEPS_HELD``: a replay re-run paced beside others on purpose says so
    #: (``f`` 2: the client keeps its stretch held, worker/stretch_replay.py); ``0`` says
    #: ``f`` 1 as for graphs that did not serve, as before (a diagnostic: the benchmarks'
    #: side ``pacedstale``)
    paced_keeps_held: bool = True
    #: ``GPUWB_STREAM_BYTES``: the NumPy device streams transfers in chunks of this many
    #: bytes as a GPU does (None: one zero-copy frame), so tests take that path without a GPU
    stream_bytes: int | None = None
    #: ``GPUWB_GRAPHS``: stretch replay (docs/stretch-replay.md). ``0`` (or ``off``) keeps no
    #: stretch a client offers, so every batch runs as sent; ``rerun`` keeps them but runs
    #: each replay from its records, never through graphs; anything else: graphs where the
    #: device has them
    graphs: str = "on"
    #: ``GPUWB_SPLIT_PIECE_US``: under a paced policy, cut long ops into pieces of about this
    #: many device seconds where that gives CuPy's own bits (worker/splitting.py). 0 (the
    #: default): never; measured on H100s it cost more than it gave (docs/fair-share.md,
    #: "Long ops"); tests set it small so that the NumPy device's small ops split
    split_piece: float = 0.0
    #: ``GPUWB_RELEASE_AT_READ``: a holder that others wait for, whose batch ends with a read
    #: and has nothing more queued, hands the device over as the read begins, not after it
    #: (worker/pacing.py, Pacer.release_before_read). ``0`` (a diagnostic): after the batch,
    #: as before issue 51
    release_at_read: bool = True
    #: ``GPUWB_RELEASE_DONE``: under ``share``, a session that gives its standing grant back
    #: with work still running says ``done`` when that work has run, and the arbiter counts it
    #: on the device till then (worker/lease.py). ``0`` (a diagnostic): the arbiter counts it
    #: off at the worker's estimate of that work, as before run 90
    release_done: bool = True
    #: ``GPUWB_SWAP_HOST_COPY``: how a GPU's swap to host memory copies, ``staged`` (the
    #: default: pageable memory through a ring of pinned buffers) or ``pinned`` (one pinned
    #: buffer); devices/cupy_swap_copies.py says why each, benchmarks/swap.py measures both
    swap_host_copy: str = "staged"
    #: ``GPUWB_UNPACED_REPLAY_US``: the estimated device time of a held stretch from which its
    #: replay is paced op by op, from its records, while other sessions share the device
    #: (worker/stretch_replay.py, UNPACED_REPLAY; None, the default: never, but 4 ms under a
    #: standing grant, SHARE_UNPACED_REPLAY; 0: always)
    unpaced_replay: float | None = None
    #: ``GPUWB_PACE_BY_LEAD=1`` (a diagnostic, benchmarks/fairness.py's ``share+pacebylead``):
    #: under a standing grant a replay is paced only where its work is more than the lead
    #: the session may launch anyway (worker/stretch_replay.py, ``pacing_bound``)
    pace_by_lead: bool = False
    #: ``GPUWB_UNPACED_BACKLOG=1`` (a diagnostic, benchmarks/fairness.py's
    #: ``share+unpacedbacklog``): under a standing grant a replay whose session has its next
    #: message waiting already is never paced (worker/stretch_replay.py, ``pacing_bound``)
    unpaced_backlog: bool = False
    #: ``GPUWB_COPY_TABLES``: graph replay copies a replay's inputs in and kept results out
    #: inside its graphs (worker/graph_replay.py, devices/cupy_graphs.py CopyTable); ``0``
    #: (a diagnostic, benchmarks/worker_phases.py's side ``notables``): one copy call each
    copy_tables: bool = True
    #: ``GPUWB_RUN_AHEAD_US``: the most device time (µs, as last measured) of a held
    #: stretch's replay that the worker runs ahead, before the client asks for it
    #: (worker/run_ahead.py; None: its MAX_SECONDS); ``0`` runs none ahead (a diagnostic,
    #: benchmarks/worker_phases.py's and held_loops.py's side ``noahead``)
    run_ahead: float | None = None
    #: ``GPUWB_RUN_AHEAD_BESIDE``: a replay is run ahead beside other sessions too, under a
    #: standing grant not told to stop (``share``: worker/pacing.py, Pacer.may_run_ahead);
    #: ``0`` (a diagnostic, fairness.py's variant ``aheadalone``): only with no lease or
    #: alone on the device, as before
    run_ahead_beside: bool = True
    #: ``GPUWB_READ_AHEAD_US``: the most device time (µs, as last measured) of a replay run
    #: ahead whose closing reads are made at once (worker/run_ahead.py; None: its
    #: READ_NOW_SECONDS); ``0`` makes them when the client asks, as before (a diagnostic)
    read_ahead: float | None = None
    #: ``GPUWB_READ_GAP_SHARE``: a replay run ahead also makes its closing reads at once where
    #: its device time is at most this share of its client's recent gaps (worker/
    #: run_ahead.py, GAP_SHARE: 1/4 by default, ``4``); ``0``: by the bound alone, as before
    read_gap_share: float | None = None
    #: ``GPUWB_STEADY_LANE``: a loop's replays that go on by fixed steps are served in a few
    #: calls a message (worker/steady_lane.py); ``0`` serves every message by the generic
    #: path (a diagnostic: the benchmarks' side ``nolane``)
    steady_lane: bool = True
    #: ``GPUWB_PUSH``: the steady lane pushes a loop's next reply as soon as it is known,
    #: before its message comes (worker/pushed_replies.py); ``0`` answers each message when
    #: it comes, as before (a diagnostic: the benchmarks' side ``nopush``)
    pushed_replies: bool = True
    #: ``GPUWB_PUSH_AHEAD``: a pushed reply's message is committed before it comes, and the
    #: next replay run ahead and pushed (worker/pushed_replies.py); ``0`` waits for each
    #: message (a diagnostic: the benchmarks' side ``nocommit``)
    push_ahead: bool = True
    #: ``GPUWB_COMMIT_WRITES``: ... also a message whose step writes its inputs, their values
    #: before it kept aside on the device for a roll-back, where the step's device time is
    #: long (worker/pushed_replies.py, ``COMMIT_WRITES_MIN_SECONDS``): ``on``; ``0`` commits
    #: such a message when it comes, as before (a diagnostic: the benchmarks' side
    #: ``nocommitwrites``): ``off``; ``always`` whatever its device time (the tests reach
    #: the path so on the NumPy device, whose steps are short)
    commit_writes: str = "on"
    #: ``GPUWB_COMMIT_FIRST``: a device-bound step whose reads wait for the client's message
    #: (``GPUWB_DEFER_READS``) is committed ahead before its reads are made, the device still
    #: running it, then read, pushed and the next step run ahead (worker/server_replies.py,
    #: ``_commit_then_read``); ``0`` reads, pushes and then commits, as before (a
    #: diagnostic: the benchmarks' side ``nocommitfirst``); ``always`` whatever the step's
    #: device time and eager ops (the tests reach the path so on the NumPy device)
    commit_first: str = "on"
    #: ``GPUWB_DEFER_READS``: a pushable run ahead's closing reads wait while its client's
    #: next message is already here, taken first as the device runs (worker/steady_lane.py,
    #: ``_read_ahead``; a step of at least ``DEFER_MIN_SECONDS`` of device time): ``on``;
    #: ``0`` makes them at once after the launch, as before (a diagnostic: the benchmarks'
    #: side ``nodefer``): ``off``; ``always`` defers them whether or not a message waits
    #: (the tests reach the path so on a host of any speed)
    defer_reads: str = "on"
    #: ``GPUWB_OVERLAP_STEPS``: a device-bound step committed before its reads has the next
    #: step launched before they are made, two steps on the device at once (worker/
    #: lane_overlap.py); ``0`` reads it first, as before (a diagnostic: the benchmarks'
    #: side ``nooverlap``)
    overlap_steps: bool = True
    #: ``GPUWB_LANE_MEASURES``: a lone session's steady lane measures the run ahead the pacer
    #: wants measured (every MEASURE_EVERY-th) itself, as the generic run ahead would
    #: (worker/steady_lane.py); ``0`` leaves that step to the generic path, as before (a
    #: diagnostic: the benchmarks' side ``nolanemeasure``)
    lane_measures: bool = True
    #: ``GPUWB_DRAWS_AHEAD``: a replay that draws random numbers from a ``RandomState`` is
    #: run ahead too, its draws undone from the generator's journal where the client does
    #: not ask for it (worker/draw_journal.py); ``0`` runs none ahead, as before (a
    #: diagnostic: the benchmarks' side ``nodraws``)
    draws_ahead: bool = True
    #: ``GPUWB_GRAPHED_DRAWS``: a Generator's plainest draws are made inside a replay's
    #: graphs (worker/eager_ops.py's ``captured_draw``); ``0`` runs them eagerly between
    #: the graphs, as before (a diagnostic: the benchmarks' side ``nographdraws``)
    graphed_draws: bool = True
    #: ``GPUWB_SPIN_YIELD``: the worker's spinning waits yield the CPU at each turn
    #: (protocol/spinning.py); ``0`` keeps it (the benchmarks' side ``noyield``, or a host
    #: whose workers have cores of their own)
    spin_yield: bool = True
    #: ``GPUWB_STACKS=1``: every thread's stack to standard error on SIGUSR2 (a diagnostic,
    #: runtime/stacks.py; a worker forked from the zygote has it from there)
    stacks: bool = False
    #: ``GPUWB_WORKER_CALLGRIND=DIR``: the worker re-runs itself under valgrind's callgrind
    #: as it starts, its instrumentation off until ``callgrind_control -i on`` (a
    #: diagnostic: benchmarks/worker_instructions.py counts the instructions of the messages
    #: between its ``on`` and ``off``), callgrind's files and log in DIR
    callgrind_dir: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> "WorkerSettings":
        env = os.environ if environ is None else environ
        lead = env.get("GPUWB_PACING_LEAD_US")
        share_lead = env.get("GPUWB_SHARE_LEAD_US")
        share_nap = env.get("GPUWB_SHARE_NAP_US")
        share_grain = env.get("GPUWB_SHARE_GRAIN_US")
        stream = env.get("GPUWB_STREAM_BYTES")
        piece = env.get("GPUWB_SPLIT_PIECE_US")
        unpaced = env.get("GPUWB_UNPACED_REPLAY_US")
        ahead = env.get("GPUWB_RUN_AHEAD_US")
        read_ahead = env.get("GPUWB_READ_AHEAD_US")
        gap_share = env.get("GPUWB_READ_GAP_SHARE")
        return cls(phases_dir=env.get("GPUWB_WORKER_PHASES") or None,
                   profile_dir=env.get("GPUWB_WORKER_PROFILE") or None,
                   pacing_trace_dir=env.get("GPUWB_PACING_TRACE") or None,
                   pacing_lead=float(lead) * 1e-6 if lead else None,
                   share_lead=float(share_lead) * 1e-6 if share_lead else None,
                   share_nap=float(share_nap) * 1e-6 if share_nap not in (None, "") else None,
                   share_grain=float(share_grain) * 1e-6 if share_grain else None,
                   share_priced=env.get("GPUWB_SHARE_PRICED") == "1",
                   pace_by_lead=env.get("GPUWB_PACE_BY_LEAD") == "1",
                   unpaced_backlog=env.get("GPUWB_UNPACED_BACKLOG") == "1",
                   paced_keeps_held=_on(env, "GPUWB_PACED_KEEPS_HELD"),
                   stream_bytes=int(stream) if stream else None,
                   graphs=_graphs_mode(env.get("GPUWB_GRAPHS")),
                   split_piece=float(piece) * 1e-6 if piece else 0.0,
                   release_at_read=_on(env, "GPUWB_RELEASE_AT_READ"),
                   release_done=_on(env, "GPUWB_RELEASE_DONE"),
                   swap_host_copy="pinned" if (env.get("GPUWB_SWAP_HOST_COPY") or "").strip().lower()
                   == "pinned" else "staged",
                   stacks=env.get("GPUWB_STACKS") == "1",
                   callgrind_dir=env.get("GPUWB_WORKER_CALLGRIND") or None,
                   copy_tables=_on(env, "GPUWB_COPY_TABLES"),
                   unpaced_replay=float(unpaced) * 1e-6 if unpaced else None,
                   run_ahead=float(ahead) * 1e-6 if ahead else None,
                   run_ahead_beside=_on(env, "GPUWB_RUN_AHEAD_BESIDE"),
                   read_ahead=float(read_ahead) * 1e-6 if read_ahead else None,
                   read_gap_share=max(0.0, float(gap_share)) if gap_share not in (None, "") else None,
                   steady_lane=_on(env, "GPUWB_STEADY_LANE"),
                   pushed_replies=_on(env, "GPUWB_PUSH"),
                   push_ahead=_on(env, "GPUWB_PUSH_AHEAD"),
                   commit_writes=_defer_reads(env.get("GPUWB_COMMIT_WRITES")),
                   commit_first=_defer_reads(env.get("GPUWB_COMMIT_FIRST")),
                   defer_reads=_defer_reads(env.get("GPUWB_DEFER_READS")),
                   overlap_steps=_on(env, "GPUWB_OVERLAP_STEPS"),
                   lane_measures=_on(env, "GPUWB_LANE_MEASURES"),
                   draws_ahead=_on(env, "GPUWB_DRAWS_AHEAD"),
                   graphed_draws=_on(env, "GPUWB_GRAPHED_DRAWS"),
                   spin_yield=_on(env, "GPUWB_SPIN_YIELD"))


def _defer_reads(value: str | None) -> str:
    """``GPUWB_DEFER_READS`` (and ``GPUWB_COMMIT_WRITES``, ``GPUWB_COMMIT_FIRST``): ``always``,
    ``off`` (``0``), else ``on``."""
    value = (value or "").strip().lower()
    if value == "always":
        return "always"
    return "off" if value in ("0", "off", "false", "no") else "on"


def environ_under_callgrind() -> dict[str, str]:
    """The environment of a worker re-run under callgrind (``GPUWB_WORKER_CALLGRIND``,
    worker/server.py): this one, less that variable (the re-run worker serves)."""
    return {k: v for k, v in os.environ.items() if k != "GPUWB_WORKER_CALLGRIND"}


def _on(env: Mapping[str, str], name: str) -> bool:
    """A setting on unless *name* says ``0``, ``off``, ``false`` or ``no``."""
    return (env.get(name) or "1").strip().lower() not in ("0", "off", "false", "no")


def _graphs_mode(value: str | None) -> str:
    value = (value or "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    return "rerun" if value == "rerun" else "on"
