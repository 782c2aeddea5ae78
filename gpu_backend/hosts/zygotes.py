"""The pool's end of its zygotes: workers forked from a warm process, not started cold.

A worker started as ``python -m gpu_backend.worker`` spends about 0.3 s of CPU on imports
before it opens its device; the pool starts one per session (and keeps spares), so on a
busy pool, and in the test suite, that is most of the pool's CPU. The zygote
(:mod:`gpu_backend.worker.zygote`) has those imports done and forks a worker per request.

One zygote per kind of worker, started at the first worker of that kind: the NumPy
device's workers cap their BLAS threads before NumPy loads (see
:data:`gpu_backend.hosts.pool_workers.BLAS_THREADS`), and the GPU workers' zygote imports CuPy
too (a CUDA context is made by each worker, after the fork). Its children are not the pool's: :class:`ForkedProcess` gives
the front door what it used of :class:`subprocess.Popen` (``pid``, ``poll``, ``wait``,
``kill``), with exit codes reported by the zygote. A zygote that could not start (it
ended before saying ``ready``) is not tried again: that kind of worker is then started
cold, as before; one that ended later is replaced at the next worker.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Callable

from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.worker.zygote import MAX_REQUEST_BYTES

__all__ = ["BLAS_VARIABLES", "ForkedProcess", "Zygote", "Zygotes"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: How long to wait for a zygote to say which pid it gave a worker (it answers right
#: after the fork; the first request also waits out the zygote's imports).
PID_TIMEOUT = 60.0
#: The exit code given to a worker whose zygote ended before reporting it.
UNKNOWN_EXIT = 255
#: What NumPy reads from the environment as it loads (its BLAS's threads): a zygote, which
#: has NumPy loaded, forks only workers whose environment sets these as its own did.
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class Zygote:
    """One zygote process and the pool's end of its socket pair. Thread-safe: the front door
    starts and polls workers while a test or the pool's shutdown waits for one."""

    def __init__(self, env: dict[str, str], gpu: bool = False) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gpu_backend.worker.zygote", "--fd", str(theirs.fileno()),
                 *(["--gpu"] if gpu else [])],
                stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=(theirs.fileno(),),
                env=env)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.ready = False
        self.gone = False
        #: held while reading the zygote's words and while a process takes its exit code
        self.lock = threading.RLock()
        self._waiting: deque[ForkedProcess] = deque()   # requests not yet answered, in order
        self._exits: dict[int, int] = {}

    def fork(self, argv: list[str], env: dict[str, str], fds: list[int],
             channel_gone: Callable[[], bool]) -> "ForkedProcess":
        """Ask for a worker running ``gpu_backend.worker ARGV`` with *env* and *fds* (its
        control channel, stdout, stderr); :class:`OSError` if the zygote has gone.
        *channel_gone*: whether the pool's end of that control channel has hung up (or
        been closed), which is how an unanswered request's fate is told (ForkedProcess)."""
        data = packb({"t": "fork", "argv": argv, "env": env, "cwd": os.getcwd()})
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError(f"a worker's request of {len(data)} bytes (at most {MAX_REQUEST_BYTES})")
        with self.lock:
            if self.gone:
                raise ConnectionError("the zygote has ended")
            process = ForkedProcess(self, ["gpu_backend.worker", *argv], channel_gone)
            socket.send_fds(self.sock, [data], fds)
            self._waiting.append(process)
            return process

    def read(self, timeout: float = 0.0) -> None:
        """Take in what the zygote has said, waiting up to *timeout* s for its first word
        (the wait holds no lock: a thread waiting for a worker never stalls the front door)."""
        if timeout > 0:
            try:
                if self.gone or not select.select([self.sock], [], [], timeout)[0]:
                    return
            except (OSError, ValueError):   # closed meanwhile (close(), or _ended elsewhere)
                return
        with self.lock:
            if self.gone or not select.select([self.sock], [], [], 0)[0]:
                return
            while True:
                try:
                    data = self.sock.recv(MAX_REQUEST_BYTES, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    data = b""
                if not data:
                    self._ended()
                    return
                self._heard(unpackb(data))

    def _heard(self, msg: dict) -> None:
        kind = msg.get("t") if isinstance(msg, dict) else None
        if kind == "ready":
            self.ready = True
        elif kind == "exited":
            self._exits[msg["pid"]] = msg["code"]
        elif kind == "forked" and self._waiting:
            process = self._waiting.popleft()
            process.known_pid = msg["pid"]
            if process.known_pid is None:
                log.error("the zygote could not start a worker: %s", msg.get("error"))
                process.returncode = 1

    def _ended(self) -> None:
        self.gone = True
        self._waiting.clear()   # (forked or not: each one's channel will tell, see poll)
        self.sock.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if not self.ready:
            log.warning("the worker zygote ended before it was ready (code %s): workers are "
                        "started without it", self.process.returncode)

    def exit_code(self, pid: int) -> int | None:
        """*pid*'s exit code once the zygote has collected it (taken once)."""
        with self.lock:
            return self._exits.pop(pid, None)

    def close(self) -> None:
        """End the zygote (its workers go on: each ends with its own control channel)."""
        with self.lock:
            if not self.gone:
                self.gone = True
                self.sock.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ForkedProcess:
    """A worker forked by a :class:`Zygote`, as the front door uses a :class:`subprocess.Popen`."""

    def __init__(self, zygote: Zygote, args: list[str], channel_gone: Callable[[], bool]) -> None:
        self.zygote = zygote
        self.args = args
        self._channel_gone = channel_gone
        #: the worker's pid once the zygote has said it (see :attr:`pid`)
        self.known_pid: int | None = None
        self.returncode: int | None = None

    def started(self, timeout: float = PID_TIMEOUT) -> bool:
        """Whether the worker was forked (its pid known), waiting up to *timeout* s to hear."""
        deadline = time.monotonic() + timeout
        while self.known_pid is None and self.returncode is None and not self.zygote.gone:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.zygote.read(min(remaining, 0.1))
        return self.known_pid is not None

    @property
    def pid(self) -> int | None:
        """The worker's process id, as on a Popen: waits for the zygote's answer if it has
        not been read yet (None only if the worker was never forked, or its zygote ended
        before it said)."""
        if self.known_pid is None:
            self.started()
        return self.known_pid

    def poll(self) -> int | None:
        with self.zygote.lock:   # (the front door and a waiting thread may both ask)
            if self.returncode is None:
                self.zygote.read()
                if self.known_pid is not None:
                    code = self.zygote.exit_code(self.known_pid)
                    if code is None and self.zygote.gone and not _alive(self.known_pid):
                        code = UNKNOWN_EXIT   # (its zygote ended first: nobody knows its code)
                    self.returncode = code
                elif self.zygote.gone and self._channel_gone():
                    # the zygote ended before it said whether it forked this worker: nothing
                    # holds the worker's end of the channel, so no worker runs (else it would,
                    # and must not be taken for dead: the pool would close its channel, and a
                    # worker whose channel hangs up takes its pool for dead, run dir and all)
                    self.returncode = UNKNOWN_EXIT
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            remaining = 0.1 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            if self.zygote.gone:
                time.sleep(min(remaining, 0.02))
            else:
                self.zygote.read(min(remaining, 0.1))
        return self.returncode

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signum: int) -> None:
        if self.poll() is None and (self.known_pid is not None or self.started(5.0)):
            try:
                os.kill(self.known_pid, signum)
            except ProcessLookupError:
                pass


def _alive(pid: int) -> bool:
    """Whether *pid* still runs (a zombie does not: its new parent has yet to collect it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Zygotes:
    """The pool's zygotes, one per kind of worker (GPU or not, and its BLAS variables),
    each started at its first worker."""

    def __init__(self) -> None:
        self._by_env: dict[tuple, Zygote] = {}
        self._failed: set[tuple] = set()

    def fork(self, argv: list[str], env: dict[str, str], fds: list[int],
             channel_gone: Callable[[], bool], gpu: bool = False) -> ForkedProcess | None:
        """A worker forked by the zygote of its kind (started with *env*, with CuPy imported
        if *gpu*, if need be), or None where that kind's zygote could not start: the caller
        starts the worker cold."""
        kind = (gpu, *(env.get(variable) for variable in BLAS_VARIABLES))
        zygote = self._by_env.get(kind)
        if zygote is not None and zygote.gone:
            if not zygote.ready:
                self._failed.add(kind)
            zygote = None
        if kind in self._failed:
            return None
        if zygote is None:
            try:
                zygote = self._by_env[kind] = Zygote(env, gpu)
            except OSError as exc:
                log.warning("could not start a worker zygote (%s): starting workers cold", exc)
                self._failed.add(kind)
                return None
        try:
            return zygote.fork(argv, env, fds, channel_gone)
        except OSError as exc:   # it has just ended: the next worker gets a new one
            log.warning("the worker zygote has gone (%s)", exc)
            zygote.read()
            return None

    def pids(self) -> list[int]:
        """The running zygotes' process ids."""
        return [z.process.pid for z in self._by_env.values() if not z.gone]

    def close(self) -> None:
        for zygote in self._by_env.values():
            zygote.close()
        self._by_env.clear()
