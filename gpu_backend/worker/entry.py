"""The worker process's start (``python -m gpu_backend.worker``, or a fork of the zygote):
its command line, the watchdog that ends it once its pool has gone, the device opened and
the session served (worker/server.py), and two diagnostics that re-run it under callgrind
or profile its serving loop (``GPUWB_WORKER_CALLGRIND``, ``GPUWB_WORKER_PROFILE``)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from gpu_backend.runtime.run_dir import owner_alive, remove_run_dir
from ..protocol import spinning
from ..runtime.stacks import dump_on_request
from .control import ControlChannel
from .server import WorkerServer
from .settings import WorkerSettings, environ_under_callgrind
from .spin_slots import SpinSlots

__all__ = ["main"]


def _rerun_under_callgrind(directory: str, control_fd: int, argv: list[str]) -> None:
    """``GPUWB_WORKER_CALLGRIND=DIR`` (a diagnostic): replace this process with the same
    worker under ``valgrind --tool=callgrind``, its instrumentation off (``callgrind_control
    -i on`` and ``off`` count what a benchmark times). A worker forked by the zygote has no
    command line of its own to re-run: *argv* is the one it was given; its control channel
    is kept across the exec, and the variable is dropped there (the re-run worker serves)."""
    env = environ_under_callgrind()
    os.set_inheritable(control_fd, True)
    out = os.path.join(directory, "callgrind.out.%p")
    log = os.path.join(directory, "valgrind.%p.log")
    os.execvpe("valgrind", ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                            f"--callgrind-out-file={out}", f"--log-file={log}",
                            sys.executable, "-m", "gpu_backend.worker", *argv], env)


def _serve_maybe_profiled(server: WorkerServer) -> str:
    """``GPUWB_WORKER_PROFILE=DIR`` writes a cProfile of each session's worker there."""
    target = server.settings.profile_dir
    if not target:
        return server.serve()
    import cProfile

    profile = cProfile.Profile()
    try:
        return profile.runcall(server.serve)
    finally:
        profile.dump_stats(os.path.join(target, f"worker-{os.getpid()}.prof"))


#: After its pool has gone, a worker still busy (inside one long op, waiting for the
#: device) is ended by its watchdog this long after the control channel hung up.
ORPHAN_GRACE = 1.0


def _watch_the_pool(control: ControlChannel, cleanup: list[str]) -> None:
    """A daemon thread: once the pool's end of the control channel hangs up (the pool was
    stopped or killed, even by SIGKILL: the pool closes a worker's end only once that worker
    has exited), remove what the pool can no longer remove (its private run directory, this
    worker's socket file) and end this process, if the main thread has not ended it within
    ORPHAN_GRACE. The process's exit frees its device
    memory; nothing it could still do would reach anyone."""
    def watch() -> None:
        control.hung_up(None)
        for path in cleanup:
            if os.path.isdir(path):
                # (only where its pool has really gone: a channel that hung up because its
                # pool end was closed by mistake in a pool that runs on, as a descriptor
                # closed twice in the pool's process did in the suite, took the baton and
                # the arbiter's socket from every later worker of that pool)
                if not owner_alive(path):
                    remove_run_dir(path)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        time.sleep(ORPHAN_GRACE)
        os._exit(3)

    threading.Thread(target=watch, name="gpuwb-pool-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_backend.worker", description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--control-fd", type=int, required=True,
                        help="the inherited end of the pool's control socket pair")
    parser.add_argument("--run-dir", help="the pool's private run directory (removed if the "
                                          "pool dies)")
    parser.add_argument("--id", required=True)
    parser.add_argument("--bind-host", default="127.0.0.1")
    parser.add_argument("--arbiter", help="the pool's arbiter address (fair and fifo policies)")
    parser.add_argument("--baton", help="the arbiter's hand-over baton file (with --arbiter)")
    parser.add_argument("--key-file", help="the pool's secret key file: serve over CURVE")
    parser.add_argument("--ipc-dir", help="also serve on ipc:// in this directory (same-host clients)")
    parser.add_argument("--spin-slots", help="the pool's spin-slot file and its slot count, PATH:N")
    parser.add_argument("--long-spin", type=float, default=0.0,
                        help="seconds to poll after each message while holding a spin slot")
    args = parser.parse_args(argv)
    settings = WorkerSettings.from_environ()
    spinning.set_yielding(settings.spin_yield)
    if settings.callgrind_dir:
        _rerun_under_callgrind(settings.callgrind_dir, args.control_fd,
                               sys.argv[1:] if argv is None else argv)
    control = ControlChannel.inherited(args.control_fd)
    cleanup = [args.run_dir] if args.run_dir else []
    _watch_the_pool(control, cleanup)
    slots = None
    if args.spin_slots:
        path, _, count = args.spin_slots.rpartition(":")
        try:
            slots = SpinSlots(path, int(count))
        except (OSError, ValueError) as exc:   # a worker without slots still serves
            if not control.hung_up(0):   # (its pool, stopping, removed them: no news)
                print(f"gpuwb worker: no spin slots ({exc})", file=sys.stderr)
    dump_on_request(settings.stacks)
    try:
        server = WorkerServer(args.device, control, args.id, args.bind_host, args.arbiter,
                              args.key_file, args.baton, args.ipc_dir, slots, args.long_spin,
                              settings)
    except Exception:
        if control.hung_up(0):   # the pool stopped while this spare was starting: nothing to say
            return 0
        raise
    if server.links.unix_path:
        cleanup.append(server.links.unix_path)
    if args.run_dir:   # (swap files go here unless the pool names a directory)
        server.swap.default_directory = Path(args.run_dir) / "swap"
        server.run_dir = args.run_dir
    reason = "stopped before a session"
    try:
        if server.wait_for_session():
            reason = _serve_maybe_profiled(server)
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        server.close(reason)
    return 0


if __name__ == "__main__":
    sys.exit(main())
