"""The pool a benchmark measures through, and its sessions by transport.

The benchmarks measure a client against a pool in another process
(:class:`gpu_backend.served.ServedPool`), as a notebook meets a shared pool. (An
embedded ``LocalPool`` runs its front door and arbiter threads inside the measuring
process, where they share its GIL: two of them side by side measure each other as much
as the policy.)
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.served import ServedPool

__all__ = ["ServedPool", "open_pool", "sessions_by_transport"]


def open_pool(policy: str, devices: str, served: bool, memory_limit: int = 64 << 30):
    """The pool a benchmark measures through: embedded (a LocalPool), or *served*."""
    if served:
        return ServedPool(policy, devices, memory_limit=memory_limit)
    return LocalPool(devices=devices, memory_limit=memory_limit, policy=policy)


@contextmanager
def sessions_by_transport(pool, transports: str) -> Iterator[dict]:
    """One session per transport of *transports* ("ipc,tcp") that *pool* offers:
    {"ipc": session over its same-host door, "tcp": session over loopback tcp}. A
    transport spelled "ipc-held" (or "tcp-held") is the same session with its ops held
    for a sync point or a full batch instead of going as soon as its worker is idle
    (``Session.eager_flush`` off; :func:`use_side` sets it before each use): one worker
    process for both, since a worker's speed depends on the vCPU it lands on.
    "ipc-socket": a second same-host session whose large transfers go over its Unix
    socket instead of the shared-memory staging ring (``GPUWB_STAGING=0``).
    "ipc-nographs" (or "tcp-nographs"): a session of its own that never offers a stretch
    for replay (``GPUWB_GRAPHS=0``, docs/stretch-replay.md): stretch replay off beside on."""
    addresses = {"ipc": pool.local_address, "tcp": pool.tcp_address}
    sessions = {}
    try:
        for t in transports.split(","):
            base, _, mode = t.partition("-")
            if addresses.get(base) and mode in ("", "held"):
                if base not in sessions:
                    sessions[base] = kernelproxy.connect(addresses[base], pool.token)
                sessions[t] = sessions[base]
            elif mode == "nographs" and addresses.get(base):
                os.environ["GPUWB_GRAPHS"] = "0"   # (read once, as the session opens)
                try:
                    sessions[t] = kernelproxy.connect(addresses[base], pool.token)
                finally:
                    del os.environ["GPUWB_GRAPHS"]
            elif base == "ipc" and mode == "socket" and addresses["ipc"]:
                # large transfers over the Unix socket, not the shared-memory ring: a session
                # of its own (the ring is set up at connect)
                os.environ["GPUWB_STAGING"] = "0"
                try:
                    sessions[t] = kernelproxy.connect(addresses["ipc"], pool.token)
                finally:
                    del os.environ["GPUWB_STAGING"]
        yield sessions
    finally:
        for session in set(sessions.values()):
            session.close()


def use_side(side: str, session) -> None:
    """Before *session* runs as *side*: its ops held ("proxy_ipc-held") or sent early."""
    if session is not None:
        session.eager_flush = not side.endswith("-held")
