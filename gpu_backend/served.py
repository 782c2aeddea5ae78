"""A pool as it is deployed: ``gpuwb-backend serve`` in a process of its own, as a child.

Where :class:`~gpu_backend.pool.LocalPool` runs the front door on a thread of the caller
(sharing its interpreter and GIL), a :class:`ServedPool` is a separate process: what a
notebook meets on a shared host, what benchmarks measure through, and what can be killed
(even with SIGKILL) to see what its clients and workers do then.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["ServedPool"]

#: How long a starting pool may take to print its addresses (seconds).
START_TIMEOUT = 120.0


class ServedPool:
    """``ServedPool(policy="share", devices="auto")``: started at once; ``address``,
    ``tcp_address``, ``local_address`` (its same-host ``ipc://`` door, or None), ``token``
    (None with a users file: clients use their own; *token*: this one, else a new one), ``metrics_port`` (with
    ``metrics=True``), ``pid``. *extra*: more ``serve`` options. A context manager."""

    def __init__(self, policy: str = "share", devices: str = "auto", *extra: str,
                 users_file: Path | None = None, memory_limit: int | None = None,
                 env: dict | None = None, metrics: bool = False,
                 usage_log: Path | None = None, token: str | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="gpuwb-served-")
        self.usage_log = usage_log or Path(self._dir.name) / "usage.jsonl"
        args = [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
                "--devices", devices, "--policy", policy, "--usage-log", str(self.usage_log), *extra]
        if memory_limit is not None:
            args += ["--memory-limit", str(memory_limit)]
        if metrics:
            args += ["--metrics-port", "0"]
        self.token: str | None = None
        if users_file is not None:
            args += ["--users-file", str(users_file)]
        else:
            self.token = token or secrets.token_urlsafe(24)
            token_file = Path(self._dir.name) / "token"
            token_file.write_text(self.token + "\n")
            args += ["--token-file", str(token_file)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.pid = self.proc.pid
        self.local_address: str | None = None
        self.metrics_port: int | None = None
        try:
            self._read_banner(metrics)
        except BaseException:
            self.stop()
            raise

    def _read_banner(self, metrics: bool) -> None:
        """The addresses the pool prints as it starts (gpu_backend.cli.serve)."""
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the pool did not start: {line!r}")
        self.address = self.tcp_address = line.split()[4]
        while not line.startswith("policy "):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the pool ended while starting")
            if line.startswith("clients on this host:"):
                self.local_address = line.split()[-1]
        if metrics:
            line = self.proc.stdout.readline()
            if "Prometheus metrics on http://" not in line:
                raise RuntimeError(f"the pool printed no metrics address: {line!r}")
            self.metrics_port = int(line.rsplit(":", 1)[1].split("/")[0])

    def kill(self) -> None:
        """SIGKILL: the pool ends at once, leaving whatever it could not clean up."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)   # (a pool parks its sessions first: door/restarts.py)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._dir.cleanup()

    def __enter__(self) -> "ServedPool":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
