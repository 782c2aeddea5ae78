"""A pool as it is deployed: ``gpuwb-backend serve`` in a process of its own.

The benchmarks measure a client against a pool in another process, as a notebook
meets a shared pool. (An embedded ``LocalPool`` runs its front door and arbiter
threads inside the measuring process, where they share its GIL: two of them
side by side measure each other as much as the policy.)
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import kernelproxy
from gpu_backend.pool import LocalPool

__all__ = ["ServedPool", "open_pool", "sessions_by_transport"]


class ServedPool:
    """``ServedPool(policy="fair", devices="auto")``; ``address`` and ``token`` once started.

    With ``users_file`` the pool reads its users from there (clients then use their own
    tokens); otherwise it gets a fresh single token. *extra*: more ``serve`` options."""

    def __init__(self, policy: str = "fair", devices: str = "auto", *extra: str,
                 users_file: Path | None = None, memory_limit: int | None = None,
                 env: dict | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="gpuwb-served-")
        args = [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
                "--devices", devices, "--policy", policy, *extra]
        if "--usage-log" not in extra:
            args += ["--usage-log", str(Path(self._dir.name) / "usage.jsonl")]
        if memory_limit is not None:
            args += ["--memory-limit", str(memory_limit)]
        self.token: str | None = None
        if users_file is not None:
            args += ["--users-file", str(users_file)]
        else:
            self.token = secrets.token_urlsafe(24)
            token_file = Path(self._dir.name) / "token"
            token_file.write_text(self.token + "\n")
            args += ["--token-file", str(token_file)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.stop()
            raise RuntimeError(f"the pool did not start: {line!r}")
        self.address = line.split()[4]
        self.tcp_address = self.address
        #: the pool's same-host (ipc://) address, when it offers one
        self.local_address: str | None = None
        line = self.proc.stdout.readline()
        if line.startswith("clients on this host:"):
            self.local_address = line.split()[-1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._dir.cleanup()

    def __enter__(self) -> "ServedPool":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


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
    socket instead of the shared-memory staging ring (``GPUWB_STAGING=0``)."""
    addresses = {"ipc": pool.local_address, "tcp": pool.tcp_address}
    sessions = {}
    try:
        for t in transports.split(","):
            base, _, mode = t.partition("-")
            if addresses.get(base) and mode in ("", "held"):
                if base not in sessions:
                    sessions[base] = kernelproxy.connect(addresses[base], pool.token)
                sessions[t] = sessions[base]
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
