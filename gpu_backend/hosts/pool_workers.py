"""The pool's worker processes as the front door keeps them: started with a control channel
of their own, told things over it, ended.

A worker is started as ``python -m gpu_backend.worker`` with the end of a socket pair it
inherits (:mod:`gpu_backend.worker.control`): its command line names paths and settings,
never a secret or an address that would accept ``ready`` from whoever connects first. The
front door polls each worker's channel beside its clients' socket and reads what the worker
says (``ready``, ``usage``, ``grow``, ``grant``, ``ended``) in :mod:`gpu_backend.door.frontdoor`.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_backend.worker.control import ControlChannel, ControlClosed
from gpu_backend.hosts.zygotes import BLAS_VARIABLES, ForkedProcess, Zygotes

__all__ = ["BLAS_THREADS", "Worker", "WorkerOptions", "spawn_worker", "environment_now"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: BLAS threads of a NumPy-device worker at most (no more than the host's cores), unless the
#: pool's environment sets them: every
#: session has its own worker, so all cores each would oversubscribe the host, and each
#: thread's buffers (OpenBLAS: tens of MB) count against the worker's memory cap.
BLAS_THREADS = 4


@dataclass
class WorkerOptions:
    """What the pool gives every worker it starts."""
    bind_host: str
    run_dir: str
    arbiter: tuple[str, str] | None = None      # the arbiter's address and baton file
    ipc_dir: str | None = None                   # where same-host clients' sockets go
    spin_slots: tuple[str, int] | None = None    # the spin-slot file and its slot count
    long_spin: float = 0.0
    key_file: Path | None = None                 # the pool's CurveZMQ key file (its path)
    #: the environment every worker starts with: the pool's process's as the pool started
    #: (None: as it is at each start). A variable set in that process later (a test's
    #: ``GPUWB_GRAPHS=0`` for a session of its own) reaches no worker of this pool: a spare
    #: started meanwhile would carry it to the next session (it refused every offer of the
    #: next test's session, twenty-sixth session)
    environ: dict | None = None


@dataclass
class Worker:
    wid: str
    device: str
    process: subprocess.Popen | ForkedProcess
    #: the pool's end of the worker's control socket pair (None once the worker is reaped)
    channel: ControlChannel | None = None
    port: int | None = None
    ipc: str | None = None     # its same-host address (unix:// path), if it has one
    info: dict = field(default_factory=dict)
    #: its device's properties, attributes and CUDA versions (the session's ``cupy.cuda``)
    runtime: dict = field(default_factory=dict)
    session: Any = None        # the frontdoor.Session it serves, or None (a spare)
    started: float = field(default_factory=time.monotonic)
    #: the worker's identity at the arbiter: a secret it sent with ``ready``
    lease_id: str = ""
    #: its host's memory, bytes, as it said with ``ready`` (0: unknown): the default host
    #: budget for swapped sessions (door/swap_broker.py)
    host_memory: int = 0
    #: the pool gave up waiting for its ``ready`` (ready_timeout): it is being ended, is no
    #: spare, and its exit is no second failed start
    given_up: bool = False

    def tell(self, msg: dict) -> bool:
        """Send *msg* over the control channel; whether it went. A worker that has stopped
        reading is killed rather than waited for (the front door never blocks on one)."""
        if self.channel is None:
            return False
        try:
            self.channel.send(msg)
            return True
        except ControlClosed:   # it has ended (a closed session's worker, as it exits)
            return False
        except OSError as exc:   # (BlockingIOError: its buffer is full)
            log.warning("worker %s does not take control messages (%s): ending it", self.wid, exc)
            self.process.kill()
            return False

    def end(self) -> None:
        """Tell it to stop, and kill it (its memory, GPU memory too, goes with the process)."""
        if self.channel is not None:
            try:
                self.channel.send({"t": "stop"})
            except (ControlClosed, OSError):
                pass
        self.process.kill()


def environment_now() -> dict:
    """This process's environment as it is now: what a pool starting here gives its workers
    (WorkerOptions.environ)."""
    return dict(os.environ)


def spawn_worker(wid: str, device: str, options: WorkerOptions,
                 zygotes: Zygotes | None = None) -> Worker:
    """Start a worker for *device*: forked by its kind's zygote where one runs (warm
    imports, :mod:`gpu_backend.hosts.zygotes`), else as a new process. It reports ``ready``
    over its channel once warm."""
    channel, theirs = ControlChannel.pair()   # the worker's end: inherited, never named
    args = ["--device", device, "--run-dir", options.run_dir, "--id", wid,
            "--bind-host", options.bind_host]
    if options.arbiter is not None:
        args += ["--arbiter", options.arbiter[0], "--baton", options.arbiter[1]]
    if options.ipc_dir is not None:
        args += ["--ipc-dir", options.ipc_dir]
    if options.spin_slots is not None:
        path, count = options.spin_slots
        args += ["--spin-slots", f"{path}:{count}", "--long-spin", str(options.long_spin)]
    if options.key_file is not None:  # the path, never the secret, on the command line
        args += ["--key-file", str(options.key_file.expanduser().resolve())]
    env = dict(os.environ if options.environ is None else options.environ)
    if device.startswith("cpu"):   # a NumPy worker's BLAS: a few threads (see BLAS_THREADS)
        threads = str(max(1, min(BLAS_THREADS, os.cpu_count() or 1)))
        for variable in BLAS_VARIABLES:
            env.setdefault(variable, threads)
    opened = []   # (null devices standing for this process's closed stdout or stderr)
    try:
        process = None
        if zygotes is not None:
            streams = []   # where a started worker would write: this process's stdout, stderr
            for fd in (1, 2):
                try:
                    os.fstat(fd)
                except OSError:
                    fd = os.open(os.devnull, os.O_WRONLY)
                    opened.append(fd)
                streams.append(fd)
            process = zygotes.fork(args, env, [theirs.fileno(), *streams], channel.gone,
                                   gpu=not device.startswith("cpu"))
        if process is None:
            process = subprocess.Popen(
                [sys.executable, "-m", "gpu_backend.worker", *args,
                 "--control-fd", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=(theirs.fileno(),),
                env=env)
    except BaseException:
        channel.close()
        raise
    finally:
        theirs.close()
        for fd in opened:
            os.close(fd)
    return Worker(wid, device, process, channel)

