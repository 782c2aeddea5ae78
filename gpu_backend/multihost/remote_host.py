"""One GPU host of a pool across hosts, as the front door sees it through the host's agent.

The host's agent (:mod:`gpu_backend.multihost.host_agent`) holds the host's
:class:`~gpu_backend.hosts.worker_host.WorkerHost`: the workers, their zygotes, the host's
arbiter. The front door keeps this stand-in, which answers what the front door asks of a
``WorkerHost`` (``workers``, ``spares``, ``keep_spares``, ``messages``, ``exited``,
``arbiter``, ``stop_workers``), so that placement, sessions, quotas and leases are the
same code for one host or many. What the front door would write to a worker's control
channel goes to the agent tagged with the worker's id (``tell``), and what the worker
writes comes back so (``worker``), over one connection per host (the ``host agent``
channel of docs/protocol.md). Nothing here is on an op's path: clients talk to their
worker directly.

The host's devices are named ``HOST/cuda:K`` in the pool; the agent knows them as
``cuda:K``.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from gpu_backend.hosts.collection import HostWorkers
from gpu_backend.hosts.pool_workers import Worker

__all__ = ["HostLeft", "RemoteHost", "RemoteWorker", "RemoteProcess", "pool_device_name",
           "host_of_device_name"]


def pool_device_name(host: str, device: str) -> str:
    """The pool's name of *device* (``cuda:0``) of *host*: ``HOST/cuda:0``."""
    return f"{host}/{device}"


def host_of_device_name(name: str) -> str:
    """The host part of a pool's device name (:func:`pool_device_name`): ``HOST`` of
    ``HOST/cuda:0``; empty for an embedded pool's own devices (``0``, ``cpu:1``)."""
    return name.rpartition("/")[0]


class HostLeft(Exception):
    """A host's agent said it is ending (``leave``); the text says why."""


class RemoteProcess:
    """A worker process on another host: the part of a ``Popen`` the front door uses. Its
    exit code arrives from the agent (``exited``); ``kill`` asks the agent."""

    pid = None   # (a process id of another host would name nothing here)

    def __init__(self, host: "RemoteHost", wid: str) -> None:
        self._host, self._wid = host, wid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            self._host.send({"t": "kill", "w": self._wid})


@dataclass(eq=False)
class RemoteWorker(Worker):
    """A worker on another host: told things through its host's agent."""
    host: Any = None   # its RemoteHost

    def tell(self, msg: dict) -> bool:
        if self.process.poll() is not None:
            return False
        self.host.send({"t": "tell", "w": self.wid, "m": msg})
        return True

    def end(self) -> None:
        if self.process.poll() is None:
            self.host.send({"t": "end", "w": self.wid})


class RemoteArbiter:
    """The arbiter of another host, as the front door calls it (``attach``, ``detach``,
    ``set_weights``; ``snapshot`` as the agent last reported it)."""

    def __init__(self, host: "RemoteHost") -> None:
        self._host = host
        #: per device (the pool's names), the host's arbiter snapshot
        self.snapshot: dict[str, Any] = {}

    def attach(self, lease: str, device: str, session: str, user: str, weight: float) -> None:
        self._host.send({"t": "attach", "lease": lease, "device": self._host.local(device),
                         "session": session, "user": user, "weight": weight})

    def detach(self, lease: str) -> None:
        self._host.send({"t": "detach", "lease": lease})

    def set_weights(self, weights: dict[str, float]) -> None:
        self._host.send({"t": "weights", "weights": dict(weights)})


class RemoteHost(HostWorkers):
    """Host *name*, whose agent is *ident* on the front door's agents socket; its workers
    listen on *address*; *send(ident, msg)* writes to the agent."""

    #: (a remote host's spin slots are its own: the front door's status does not count them)
    spin_slots = None

    def __init__(self, name: str, ident: bytes, address: str, local_devices: list[str],
                 send: Callable[[bytes, dict], None], policy: str) -> None:
        self.name, self.ident, self.address = name, ident, address
        self.devices = [pool_device_name(name, d) for d in local_devices]
        self._local = dict(zip(self.devices, local_devices))
        self._send = send
        self.workers: dict[str, RemoteWorker] = {}
        self.arbiter = RemoteArbiter(self) if policy != "none" else None
        self.joined = self.heard = time.monotonic()
        self.worker_processes = 0   # as the agent last reported
        self._inbox: dict[str, deque] = {}
        self._exited: list[RemoteWorker] = []   # workers the agent said exited, not yet reaped
        self._next_worker = 0

    def send(self, msg: dict) -> None:
        self._send(self.ident, msg)

    def local(self, device: str) -> str:
        """*device* (the pool's name) as this host names it."""
        return self._local[device]

    # ------------------------------------------------------------ starting
    def spawn(self, device: str) -> RemoteWorker:
        self._next_worker += 1
        wid = f"{self.name}-w{self._next_worker}-{secrets.token_hex(3)}"
        worker = RemoteWorker(wid, device, RemoteProcess(self, wid), host=self)
        self.workers[wid] = worker
        self._inbox[wid] = deque()
        self.send({"t": "spawn", "w": wid, "device": self.local(device)})
        return worker

    # ------------------------------------------------------------ listening
    def received(self, msg: dict) -> RemoteWorker | None:
        """Take one message of the agent's; the worker it brought news of, if any. Raises
        KeyError, TypeError or ValueError on a malformed one."""
        kind = msg["t"]
        self.heard = time.monotonic()
        if kind == "worker":
            worker = self.workers.get(msg["w"])
            if worker is None or not isinstance(msg["m"], dict):
                return None
            self._inbox[worker.wid].append(msg["m"])
            return worker
        if kind == "exited":
            worker = self.workers.get(msg["w"])
            if worker is not None and worker.process.returncode is None:
                worker.process.returncode = int(msg["code"])
                self._exited.append(worker)
            return None
        if kind == "load":
            self.worker_processes = int(msg["workers"])
            if self.arbiter is not None and isinstance(msg["arbiter"], dict):
                self.arbiter.snapshot = {d: msg["arbiter"].get(local)
                                         for d, local in self._local.items()
                                         if local in msg["arbiter"]}
            return None
        if kind == "leave":
            raise HostLeft(str(msg["why"])[:300])
        raise ValueError(f"unknown agent message type {kind!r:.40}")

    def messages(self, worker: Worker) -> Iterator[dict]:
        """What *worker* has said since the last call (its exit comes from :meth:`exited`)."""
        inbox = self._inbox.get(worker.wid)
        while inbox:
            yield inbox.popleft()

    def exited(self) -> Iterator[tuple[Worker, int]]:
        while self._exited:   # (only those the agent said exited: no pass over them all)
            worker = self._exited.pop(0)
            yield worker, worker.process.returncode
            self.workers.pop(worker.wid, None)
            self._inbox.pop(worker.wid, None)

    def give_up(self, worker: Worker) -> None:
        """Stop waiting for *worker*'s ready: the agent is told to end it, and it is
        forgotten here at once (its spawn may never have reached the agent, which would
        then never say it exited; what it says from now on is ignored)."""
        super().give_up(worker)
        self.workers.pop(worker.wid, None)
        self._inbox.pop(worker.wid, None)

    def lost(self, code: int = -1) -> None:
        """The host is gone: every worker of it counts as exited with *code*."""
        for worker in self.workers.values():
            if worker.process.returncode is None:
                worker.process.returncode = code
                self._exited.append(worker)

    # ------------------------------------------------------------ ending
    def stop_workers(self) -> None:
        self.send({"t": "stop"})

    def close(self) -> None:
        pass
