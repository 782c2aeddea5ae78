"""The pool a benchmark measures through, and its sessions by transport.

The benchmarks measure a client against a pool in another process
(:class:`gpu_backend.served.ServedPool`), as a notebook meets a shared pool. (An
embedded ``LocalPool`` runs its front door and arbiter threads inside the measuring
process, where they share its GIL: two of them side by side measure each other as much
as the policy.)
"""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Iterator

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.served import ServedPool

__all__ = ["ServedPool", "open_pool", "sessions_by_transport", "sessions_in_own_pools", "sessions_for",
           "POOL_ENV", "OWN_POOLS_HELP"]


def open_pool(policy: str, devices: str, served: bool, memory_limit: int = 64 << 30):
    """The pool a benchmark measures through: embedded (a LocalPool), or *served*."""
    if served:
        return ServedPool(policy, devices, memory_limit=memory_limit)
    return LocalPool(devices=devices, memory_limit=memory_limit, policy=policy)


#: Sides that are a session of their own, opened with these variables set (each read once,
#: as the session opens: kernelproxy.settings): "nographs" never offers a stretch for
#: replay; "nofast" turns the client's fast path for held stretches off; "noearly" sends
#: a held stretch's replay at its sync point, never early; "nocuts" does not cut a loop
#: with no sync point into pieces (kernelproxy/loop_cuts.py); "socket" sends large
#: transfers over the Unix socket, not the shared-memory staging ring; "nofuse" runs
#: ``cupy.fuse`` functions unfused (kernelproxy/fuse_trace.py); "earlyfirst" keeps sending a
#: loop's replays early where the worker's lane would push their replies were they sent whole
#: (kernelproxy/early_replay.py, ``EarlyPlan.lane``).
SESSION_ENV = {"nographs": {"GPUWB_GRAPHS": "0"},
               "nofast": {"GPUWB_FAST_PATH": "0"},
               "noearly": {"GPUWB_EARLY_REPLAY": "0"},
               "earlyfirst": {"GPUWB_LANE_OVER_EARLY": "0"},
               "nocuts": {"GPUWB_LOOP_CUTS": "0"},
               "nofuse": {"GPUWB_FUSE": "0"},
               "socket": {"GPUWB_STAGING": "0"},
               "framed": {"GPUWB_STAGED_UPLOADS": "0"},
               "nocompiled": {"GPUWB_COMPILED": "0"}}


#: Sides that need a pool of their own, started with these variables set (its workers
#: read them as they start): "noahead" runs no replay ahead (``GPUWB_RUN_AHEAD_US=0``,
#: gpu_backend/worker/run_ahead.py); "nodraws" runs none ahead that draws random numbers
#: (``GPUWB_DRAWS_AHEAD=0``, gpu_backend/worker/draw_journal.py); "nopush" pushes no reply
#: before its message comes (``GPUWB_PUSH=0``, gpu_backend/worker/pushed_replies.py);
#: "nocommit" pushes but commits no message before it comes (``GPUWB_PUSH_AHEAD=0``);
#: "nolane" serves every message by the generic path (``GPUWB_STEADY_LANE=0``); "noyield"
#: spins without yielding the CPU, the worker and the session both (``GPUWB_SPIN_YIELD=0``,
#: gpu_backend/protocol/spinning.py); "nographdraws" runs a Generator's draws eagerly between
#: a replay's graphs, as before they were made inside them (``GPUWB_GRAPHED_DRAWS=0``,
#: gpu_backend/worker/eager_ops.py); "nodefer" makes a pushable run ahead's closing reads at once
#: after its launch, as before they waited for the client's message already there
#: (``GPUWB_DEFER_READS=0``, gpu_backend/worker/steady_lane.py); "nolanemeasure" leaves the
#: replay the pacer wants measured to the generic run ahead, as before a lone session's lane
#: measured it itself (``GPUWB_LANE_MEASURES=0``); "nocommitwrites" commits a step that writes
#: its inputs only when its message comes, as before such a step was committed ahead
#: (``GPUWB_COMMIT_WRITES=0``, gpu_backend/worker/pushed_replies.py); "nocommitfirst" reads a
#: device-bound step's values and pushes its reply before committing it, as before it was
#: committed first (``GPUWB_COMMIT_FIRST=0``, gpu_backend/worker/server_replies.py);
#: "nooverlap" reads such a step before launching the next, as before two steps were on the
#: device at once (``GPUWB_OVERLAP_STEPS=0``, gpu_backend/worker/lane_overlap.py)
POOL_ENV = {"nocommitwrites": {"GPUWB_COMMIT_WRITES": "0"}, "nocommitfirst": {"GPUWB_COMMIT_FIRST": "0"},
            "nooverlap": {"GPUWB_OVERLAP_STEPS": "0"},
            "noahead": {"GPUWB_RUN_AHEAD_US": "0"}, "nodraws": {"GPUWB_DRAWS_AHEAD": "0"},
            "nodefer": {"GPUWB_DEFER_READS": "0"}, "nolanemeasure": {"GPUWB_LANE_MEASURES": "0"},
            "nopush": {"GPUWB_PUSH": "0"}, "nocommit": {"GPUWB_PUSH_AHEAD": "0"},
            "nolane": {"GPUWB_STEADY_LANE": "0"}, "noyield": {"GPUWB_SPIN_YIELD": "0"},
            "nographdraws": {"GPUWB_GRAPHED_DRAWS": "0"}}


@contextmanager
def _environment(values: dict):
    """*values* set in the environment, the earlier values (or their absence) restored."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def sessions_by_transport(pool, transports: str) -> Iterator[dict]:
    """One session per transport of *transports* ("ipc,tcp") that *pool* offers:
    {"ipc": session over its same-host door, "tcp": session over loopback tcp}. A
    transport spelled "ipc-held" (or "tcp-held") is the same session with its ops held
    for a sync point or a full batch instead of going as soon as its worker is idle
    (``Session.eager_flush`` off; :func:`use_side` sets it before each use): one worker
    process for both, since a worker's speed depends on the vCPU it lands on.
    "ipc-socket": a second same-host session whose large transfers go over its Unix
    socket instead of the shared-memory staging ring (``GPUWB_STAGING=0``). "ipc-framed": a
    session whose uploads up to the device's chunk size go as frames through the socket, as
    before 2026-11-28 (``GPUWB_STAGED_UPLOADS=0``, kernelproxy/session.py).
    "ipc-nographs" (or "tcp-nographs"): a session of its own that never offers a stretch
    for replay (``GPUWB_GRAPHS=0``, docs/stretch-replay.md): stretch replay off beside on.
    "ipc-nofast" (or "tcp-nofast"): a session of its own with the client's fast path for
    held stretches off (``GPUWB_FAST_PATH=0``, issue 50): replay on, every op of a held
    stretch issued as before. "ipc-noearly" (or "tcp-noearly"): a session of its own whose
    runs send their replays at their sync points, never early (``GPUWB_EARLY_REPLAY=0``,
    kernelproxy/early_replay.py). "ipc-nocompiled": a session whose held ops are checked by
    the Python methods, not the compiled accelerator (``GPUWB_COMPILED=0``,
    kernelproxy/held_ops.py). Modes joined by "+" apply together ("ipc-noearly+nocompiled")."""
    addresses = {"ipc": pool.local_address, "tcp": pool.tcp_address}
    sessions = {}
    try:
        for t in transports.split(","):
            base, _, mode = t.partition("-")
            if not addresses.get(base):
                continue
            if mode in ("", "held"):
                if base not in sessions:
                    sessions[base] = kernelproxy.connect(addresses[base], pool.token)
                sessions[t] = sessions[base]
            elif all(part in SESSION_ENV for part in mode.split("+")) and (
                    mode not in ("socket", "framed") or base == "ipc"):
                # (the staging ring is the same-host link's: "socket" is for ipc alone;
                # modes joined by "+" apply together: "ipc-noearly+nocompiled")
                env = {k: v for part in mode.split("+") for k, v in SESSION_ENV[part].items()}
                with _environment(env):
                    sessions[t] = kernelproxy.connect(addresses[base], pool.token)
        yield sessions
    finally:
        for session in set(sessions.values()):
            session.close()


def use_side(side: str, session) -> None:
    """Before *session* runs as *side*: its ops held ("proxy_ipc-held") or sent early."""
    if session is not None:
        session.eager_flush = not side.endswith("-held")


@contextmanager
def sessions_in_own_pools(policy: str, devices: str, transports: str, served: bool = False) -> Iterator[dict]:
    """One session per transport of *transports*, each in a pool of its own on the same
    devices: each is alone on its device, as one user's session is (a worker runs replays
    ahead only where nobody shares its device: gpu_backend/worker/run_ahead.py). A side
    ending in "-noahead" (of POOL_ENV) gets a pool that runs no replay ahead: "ipc-noahead",
    "ipc-noearly-noahead"."""
    with ExitStack() as stack:
        sessions = {}
        for t in transports.split(","):
            base, env = t, {}
            for mode, values in POOL_ENV.items():
                if t.endswith("-" + mode):
                    base, env = t[: -len(mode) - 1], values
            with _environment(env):   # (until its session has its worker: workers started
                pool = stack.enter_context(open_pool(policy, devices, served))   # later read it too)
                own = stack.enter_context(sessions_by_transport(pool, base))
            if base in own:
                sessions[t] = own[base]
        yield sessions


#: the help of the benchmarks' ``--own-pools`` (sessions_for)
OWN_POOLS_HELP = ("each proxy side's session in a pool of its own, alone on the device as one user's "
                  "is (the worker runs replays ahead only then); a side ending in -noahead runs none "
                  "ahead, one ending in -nodraws none that draws random numbers (served_pool.POOL_ENV)")


@contextmanager
def sessions_for(policy: str, devices: str, transports: str, served: bool = False,
                 own_pools: bool = False) -> Iterator[dict]:
    """A benchmark's sessions by transport: all in one pool (sessions_by_transport), or each
    in a pool of its own (*own_pools*: sessions_in_own_pools)."""
    if own_pools:
        with sessions_in_own_pools(policy, devices, transports, served) as sessions:
            yield sessions
        return
    with open_pool(policy, devices, served) as pool, sessions_by_transport(pool, transports) as sessions:
        yield sessions
