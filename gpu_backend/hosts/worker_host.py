"""The workers of one host and what they share there, as the front door keeps them.

A pool's workers share things that only make sense on their own host: the pool's private
run directory (the arbiter's socket, the baton, the spin-slot file), the spin slots, the
per-device arbiter, the zygotes that fork them, and the control channels (socket pairs)
over which the front door talks to each. The front door decides what the workers do
(placement, sessions, quotas, leases); this class starts them, keeps their channels in
the front door's poller, reads what they say, collects them when they exit, and ends them
all at shutdown. It is the part of today's pool that a host agent of a multi-host pool
would hold for its host (docs/cluster.md).
"""

from __future__ import annotations

import logging
import secrets
import subprocess
from pathlib import Path
from typing import Iterator

import zmq

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.config import PoolSettings
from gpu_backend.hosts.collection import HostWorkers
from gpu_backend.hosts.pool_workers import Worker, WorkerOptions, environment_now, spawn_worker
from gpu_backend.runtime.run_dir import make_run_dir, remove_run_dir
from gpu_backend.worker.control import ControlClosed
from gpu_backend.worker.spin_slots import default_slot_count, make_slot_file
from gpu_backend.hosts.zygotes import Zygotes

__all__ = ["WorkerHost", "CHANNEL_CLOSED"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: What :meth:`WorkerHost.messages` yields when a worker's channel has closed (it is ending).
CHANNEL_CLOSED = object()


class WorkerHost(HostWorkers):
    """The workers of *devices* on this host, their channels in *poller*."""

    def __init__(self, ctx: zmq.Context, settings: PoolSettings, devices: list[str],
                 ipc_dir: str | None, poller: zmq.Poller, bind_host: str | None = None,
                 key_file: Path | None = None) -> None:
        """*bind_host* and *key_file*: where the workers listen and the key pair they serve
        with, when not the pool's listen host and key file (a host agent's)."""
        self.devices = devices
        self.poller = poller
        #: what only the pool and its workers share (the arbiter's socket, the baton, the
        #: spin slots), in a directory no other local user may enter (run_dir.py)
        self.run_dir = make_run_dir()
        #: the workers' spin slots (spin_slots.py): the lock file and its count, or None
        count = settings.spin_slots if settings.spin_slots is not None else default_slot_count()
        self.spin_slots: tuple[str, int] | None = None
        if count > 0 and settings.worker_spin_ms > 0:
            try:
                self.spin_slots = (make_slot_file(count, self.run_dir), count)
            except OSError as exc:   # no writable temp directory: serve, only the short spin
                log.warning("no spin slots (%s): workers sleep 0.2 ms after each message", exc)
        #: decides who may launch work on each device (None: CUDA time-slicing, policy "none")
        self.arbiter = (Arbiter(ctx, settings.policy, devices, run_dir=self.run_dir,
                                trace=str(settings.arbiter_trace) if settings.arbiter_trace
                                else None, **settings.policy_options(),
                                **settings.company_options()).start()
                        if settings.policy != "none" else None)
        #: what every worker is started with (pool_workers.spawn_worker)
        self.options = WorkerOptions(
            bind_host=bind_host or settings.host or "127.0.0.1", run_dir=self.run_dir,
            arbiter=(self.arbiter.address, self.arbiter.baton_path) if self.arbiter else None,
            ipc_dir=ipc_dir, spin_slots=self.spin_slots,
            long_spin=settings.worker_spin_ms / 1e3, key_file=key_file or settings.key_file,
            environ=environment_now())
        #: warm processes that fork the workers (gpu_backend.hosts.zygotes); None: started cold
        self.zygotes = Zygotes() if settings.worker_zygote else None
        self.workers: dict[str, Worker] = {}
        self._by_fd: dict[int, Worker] = {}     # control channel descriptor -> its worker
        self._next_worker = 0

    # ------------------------------------------------------------ starting
    def spawn(self, device: str, wid: str | None = None) -> Worker:
        """Start a worker for *device*, named *wid* (default: a new name)."""
        if wid is None:
            self._next_worker += 1
            wid = f"w{self._next_worker}-{secrets.token_hex(3)}"
        worker = spawn_worker(wid, device, self.options, self.zygotes)
        self.workers[wid] = worker
        self._by_fd[worker.channel.fileno()] = worker
        self.poller.register(worker.channel.fileno(), zmq.POLLIN)
        return worker

    # ------------------------------------------------------------ listening
    def worker_at(self, fd: int) -> Worker | None:
        """The worker whose control channel is *fd* (a poller event), or None."""
        return self._by_fd.get(fd)

    def messages(self, worker: Worker) -> Iterator[dict | object]:
        """Every message *worker* has sent so far (undecodable ones dropped), then
        :data:`CHANNEL_CLOSED` once if its channel has closed (the channel is then closed
        here too; :meth:`exited` collects the process)."""
        while worker.channel is not None:
            try:
                msg = worker.channel.recv()
            except ControlClosed:
                self.close_channel(worker)
                yield CHANNEL_CLOSED
                return
            if msg is None:
                return
            if isinstance(msg, dict):
                yield msg

    def close_channel(self, worker: Worker) -> None:
        if worker.channel is not None:
            fd = worker.channel.fileno()
            self._by_fd.pop(fd, None)
            try:
                self.poller.unregister(fd)
            except KeyError:
                pass
            worker.channel.close()
            worker.channel = None

    def exited(self) -> Iterator[tuple[Worker, int]]:
        """Workers whose process has exited, with its code, forgotten as they are yielded
        (the caller reads what the channel still holds first: :meth:`messages`)."""
        for wid, worker in list(self.workers.items()):
            code = worker.process.poll()
            if code is None:
                continue
            yield worker, code
            self.close_channel(worker)
            del self.workers[wid]

    # ------------------------------------------------------------ ending
    def stop_workers(self) -> None:
        """Tell every worker to stop and wait a little for each (then the zygotes end)."""
        for worker in self.workers.values():
            worker.end()
        for worker in self.workers.values():
            try:
                worker.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.zygotes is not None:
            self.zygotes.close()
        for worker in self.workers.values():
            self.close_channel(worker)

    def close(self) -> None:
        """After :meth:`stop_workers` and the sessions' end: the arbiter, the run directory."""
        if self.arbiter is not None:
            self.arbiter.stop()
        remove_run_dir(self.run_dir)
