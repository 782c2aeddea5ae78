"""The client's own settings, read from ``GPUWB_*`` variables when a session opens.

The pool's settings (``gpu_backend.config.PoolSettings``) come from pydantic-settings;
the client's few are read here with the standard library, because pydantic-settings
costs about 175 ms to import and ``import cupy`` through the proxy must stay quick
(where the pool is and which token to use is the kernel's business:
``workbench.connection``). Each :class:`~kernelproxy.session.Session` reads them once,
when it opens, so a test or a notebook that changes the environment affects the next
session and never one already open.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

__all__ = ["SessionSettings"]


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """Unset or empty: *default*; ``0``, ``false``, ``no``, ``off``: False; else True."""
    value = (environ.get(name) or "").strip().lower()
    if not value:
        return default
    return value not in ("0", "false", "no", "off")


@dataclass(frozen=True)
class SessionSettings:
    #: ``GPUWB_LAUNCH_BLOCKING=1``: every op waits for its reply, so its error is raised by
    #: the call that issued it rather than at the next sync point (as CUDA_LAUNCH_BLOCKING
    #: does); for debugging and for CuPy's test suite, whose ``pytest.raises`` expect it.
    launch_blocking: bool = False
    #: ``GPUWB_STAGING=0``: large transfers to a worker on this host cross the socket in
    #: chunks instead of the shared-memory staging ring.
    staging: bool = True
    #: ``GPUWB_STAGED_UPLOADS=0``: uploads between STAGED_UPLOAD_BYTES and the device's
    #: chunk size travel as frames through the socket, as before 2026-11-28, instead of
    #: through the staging ring (kernelproxy.session; the benchmarks' side ``-framed``).
    staged_uploads: bool = True
    #: ``GPUWB_EAGER_FLUSH=0``: hold ops until a sync point instead of sending them while
    #: the worker is idle (to measure the difference; kernelproxy.session.EAGER_OPS).
    eager_flush: bool = True
    #: ``GPUWB_GRAPHS=0``: never offer a repeated stretch of ops to the worker for replay
    #: (docs/stretch-replay.md); every batch then travels as its ops.
    graphs: bool = True
    #: ``GPUWB_REPLAY_MEASURED=0``: keep every repeated stretch held, without timing its
    #: replays against its ops run pipelined (kernelproxy.stretch_replay; for tests that
    #: count replays, and to measure the difference).
    replay_measured: bool = True
    #: ``GPUWB_FAST_PATH=0``: a held stretch's ops are queued and keyed one by one, not
    #: answered from its template on the client (kernelproxy/stretch_templates.py); to
    #: measure the difference, and as a way out should the fast path misbehave.
    fast_path: bool = True
    #: ``GPUWB_EARLY_REPLAY=0``: a run answered from its template sends its replay at its
    #: sync point, never early, before its last ops (kernelproxy/early_replay.py); to
    #: measure the difference, and as a way out should early replay misbehave.
    early_replay: bool = True
    #: ``GPUWB_SEVERAL_HELD=0``: a stretch with a call of several results (``api.ARRAYS``:
    #: ``modf``, ``meshgrid``, ``linalg.qr``, ...) is never held, and such a call ends a
    #: held stretch before it, as before 2026-11-30 (docs/stretch-replay.md, "Calls of
    #: several results inside held stretches"); to measure the difference.
    several_held: bool = True
    #: ``GPUWB_SEVERAL_JOIN=0``: a call of several results in the middle of a held stretch
    #: ends it and goes in a batch of its own, instead of joining it (a step one message,
    #: the call run eagerly between the stretch's graphs). Run 313 measured joining at
    #: 0.94x the cut's time over the unseen loops that make such calls (geometric mean).
    #: A call that goes as one only for want of metadata the client lacks now (``divmod``
    #: of an operand whose dtype it does not know, ``split`` of one whose shape: later
    #: ones of the same code go as two ops or as slices) never joins (issue.call).
    several_join: bool = True
    #: ``GPUWB_LANE_OVER_EARLY=0``: a held loop whose early replays the worker's steady lane
    #: answers keeps sending them early, though its replies would be pushed were its
    #: messages sent whole (reply ``L``, kernelproxy/early_replay.py ``EarlyPlan.lane``); to
    #: measure the difference.
    lane_over_early: bool = True
    #: ``GPUWB_LOOP_CUTS=0``: a loop with no sync point is not cut into pieces that repeat
    #: (kernelproxy/loop_cuts.py); its ops travel in batches cut by size, never replayed;
    #: to measure the difference, and as a way out should the cutting misbehave.
    loop_cuts: bool = True
    #: ``GPUWB_COMPILED=0``: a held stretch's operators are checked against its template by
    #: the Python methods, not by the compiled accelerator (kernelproxy/held_ops.py, where
    #: it was built); to measure the difference, and as a way out.
    compiled: bool = True
    #: ``GPUWB_FUSE=0``: a ``cupy.fuse`` function runs unfused, each operation an ordinary
    #: op (the values of the same operations, not of CuPy's fused kernel), as before the pool
    #: fused them (kernelproxy/fuse_trace.py); to measure the difference, and as a way out.
    fuse: bool = True
    #: ``GPUWB_SPIN_YIELD=0``: the session's spinning waits (its replies, its staging ring)
    #: keep the CPU instead of yielding it at each turn (gpu_backend/protocol/spinning.py)
    spin_yield: bool = True
    #: ``GPUWB_PREFETCH=0``: the arrays a loop downloads right after a replayed stretch are
    #: downloaded when asked, each a round trip, not sent with the replay's reply
    #: (kernelproxy/trailing_downloads.py); to measure the difference, and as a way out.
    prefetch: bool = True
    #: ``JPY_SESSION_NAME``: the notebook's path, which Jupyter Server gives the kernels it
    #: starts for a notebook; the session's label in the pool's status (the Lab panel
    #: names the notebook that opened each session)
    notebook: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> "SessionSettings":
        env = os.environ if environ is None else environ
        return cls(launch_blocking=_flag(env, "GPUWB_LAUNCH_BLOCKING", False),
                   staging=_flag(env, "GPUWB_STAGING", True),
                   staged_uploads=_flag(env, "GPUWB_STAGED_UPLOADS", True),
                   eager_flush=_flag(env, "GPUWB_EAGER_FLUSH", True),
                   graphs=_flag(env, "GPUWB_GRAPHS", True),
                   replay_measured=_flag(env, "GPUWB_REPLAY_MEASURED", True),
                   fast_path=_flag(env, "GPUWB_FAST_PATH", True),
                   early_replay=_flag(env, "GPUWB_EARLY_REPLAY", True),
                   several_held=_flag(env, "GPUWB_SEVERAL_HELD", True),
                   several_join=_flag(env, "GPUWB_SEVERAL_JOIN", True),
                   lane_over_early=_flag(env, "GPUWB_LANE_OVER_EARLY", True),
                   loop_cuts=_flag(env, "GPUWB_LOOP_CUTS", True),
                   compiled=_flag(env, "GPUWB_COMPILED", True),
                   fuse=_flag(env, "GPUWB_FUSE", True),
                   spin_yield=_flag(env, "GPUWB_SPIN_YIELD", True),
                   prefetch=_flag(env, "GPUWB_PREFETCH", True),
                   notebook=env.get("JPY_SESSION_NAME") or None)
