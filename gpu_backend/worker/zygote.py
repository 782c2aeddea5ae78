"""The zygote: a process with the worker's modules imported that forks a worker per request.

Started by the pool as ``python -m gpu_backend.worker.zygote --fd N``, one per kind of
device (the NumPy device's workers need their BLAS threads set before NumPy loads). A
fresh ``python -m gpu_backend.worker`` spends about 0.3 s of CPU importing NumPy, ZeroMQ
and the worker before it can open its device; a fork of this process starts there. The
pool (:mod:`gpu_backend.hosts.zygotes`) sends each request over an inherited socket pair, like
the workers' control channels: nobody else can reach it.

A request is a ``fork`` message (``ZygoteFork`` in :mod:`gpu_backend.protocol.messages`)
with three descriptors passed alongside (``SCM_RIGHTS``): the worker's end of its control
channel, and its stdout and stderr. The zygote forks; the child takes the pool's environment and working directory of the
moment, its own session (``setsid``), those descriptors, and runs the worker's ``main``. The zygote answers
``forked`` with the pid (None and why if it could not fork), then ``exited`` with the pid and
its code once it has collected that child (a code as :class:`subprocess.Popen` gives it:
negative for a signal).

A CUDA context must not cross a fork. The GPU workers' zygote (``--gpu``) imports CuPy,
which makes none, and checks that none was made (``cupy_device.preload``); each worker
makes its own context after the fork, as it opens its device. NumPy's OpenBLAS starts threads of its own when it loads; it
stops and restarts them around ``fork`` (its ``pthread_atfork`` handlers), and no Python
thread runs here, so the fork is safe (Python 3.12's warning about forking a process with
threads is silenced for that reason).
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import shlex
import signal
import socket
import sys
import traceback
import warnings

from setproctitle import setproctitle

from gpu_backend.runtime.gc_pauses import settle
from gpu_backend.runtime.stacks import dump_on_request
from ..protocol.codec import packb, unpackb

__all__ = ["main", "MAX_REQUEST_BYTES", "REQUEST_FDS"]

#: The largest request (argv and environment); larger ones are refused.
MAX_REQUEST_BYTES = 1 << 20
#: Descriptors that come with each request: control channel, stdout, stderr.
REQUEST_FDS = 3


def _send(sock: socket.socket, msg: dict) -> None:
    sock.send(packb(msg))   # (blocking: the pool reads its end whenever it starts a worker)


def _run_worker(sock: socket.socket, wakeup: tuple[int, int], argv: list[str], env: dict,
                cwd: str, fds: list[int]) -> None:
    """In the child: become a worker, as ``python -m gpu_backend.worker ARGV`` would; never
    returns (the zygote's own loop and exit handlers must not run here)."""
    code = 1
    try:
        sock.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wakeup:
            os.close(fd)
        os.setsid()
        # what ps shows: the command line a worker started on its own would have
        setproctitle(shlex.join([sys.executable, "-m", "gpu_backend.worker", *argv]))
        control, out, err = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        if "numpy.random" in sys.modules:   # its global state was seeded in the zygote
            sys.modules["numpy.random"].seed()
        from .entry import main as worker_main
        code = worker_main([*argv, "--control-fd", str(control)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _reap(sock: socket.socket) -> None:
    """Collect every child that has exited and tell the pool its code."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"t": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _fork(sock: socket.socket, wakeup: tuple[int, int], data: bytes, fds: list[int]) -> None:
    """Answer one request: fork its worker, or say why not."""
    try:
        request = unpackb(data)
        argv, env, cwd = request["argv"], request["env"], request["cwd"]
        if (request["t"] != "fork" or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)
                or not isinstance(env, dict) or not isinstance(cwd, str)
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
                or len(fds) != REQUEST_FDS):
            raise ValueError("a request is {t: fork, argv: [str], env: {str: str}, cwd: str} "
                             "and three descriptors")
    except Exception as exc:
        for fd in fds:
            os.close(fd)
        _send(sock, {"t": "forked", "pid": None, "error": f"bad request: {exc}"})
        return
    try:
        pid = os.fork()
    except OSError as exc:
        _send(sock, {"t": "forked", "pid": None, "error": f"fork failed: {exc}"})
        pid = -1
    if pid == 0:
        _run_worker(sock, wakeup, argv, env, cwd, fds)
    for fd in fds:   # the child has its copies: the pool must see its channel close with it
        os.close(fd)
    if pid > 0:
        _send(sock, {"t": "forked", "pid": pid})


def serve(sock: socket.socket) -> None:
    """Fork workers until the pool's end of *sock* closes."""
    wakeup = os.pipe()
    for fd in wakeup:
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wakeup[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)   # (wakes the select below)
    _send(sock, {"t": "ready", "pid": os.getpid()})
    while True:
        readable, _, _ = select.select([sock, wakeup[0]], [], [])
        if wakeup[0] in readable:
            while True:
                try:
                    if not os.read(wakeup[0], 512):
                        break
                except BlockingIOError:
                    break
        _reap(sock)
        if sock in readable:
            try:
                data, fds, _flags, _address = socket.recv_fds(sock, MAX_REQUEST_BYTES, REQUEST_FDS)
            except OSError:
                return
            if not data:   # the pool has gone: its workers watch their own channels
                return
            _fork(sock, wakeup, data, list(fds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_backend.worker.zygote", description=__doc__)
    parser.add_argument("--fd", type=int, required=True,
                        help="the inherited end of the pool's socket pair")
    parser.add_argument("--gpu", action="store_true",
                        help="it forks GPU workers: import CuPy ahead too (no CUDA context)")
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    # (setproctitle finds the memory it rewrites once, while the environment is the one
    # this process started with: the forks change theirs)
    setproctitle(shlex.join([sys.executable, "-m", "gpu_backend.worker.zygote", *sys.argv[1:]]))
    importlib.import_module(f"{__package__}.server")   # what every worker imports: why this exists
    if args.gpu:
        from ..devices import preload_gpu
        preload_gpu()   # (raises, before ready, if CuPy's import made a CUDA context)
    warnings.filterwarnings("ignore", message=r".*multi-threaded, use of fork\(\)",
                            category=DeprecationWarning)
    dump_on_request(os.environ.get("GPUWB_STACKS") == "1")   # (stacks on SIGUSR2: a diagnostic)
    settle()   # imported objects out of the collector's sight: forks share their pages longer
    try:
        serve(sock)
    except (BrokenPipeError, ConnectionResetError):   # the pool has gone
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
