"""The hosts whose workers a front door places sessions on.

A single-host pool has one: its own :class:`~gpu_backend.hosts.worker_host.WorkerHost`, whose
devices keep their plain names (``cuda:0``). A pool across hosts has one
:class:`~gpu_backend.multihost.remote_host.RemoteHost` per GPU host that joined through its agent
(docs/cluster.md), whose devices are named ``HOST/cuda:0``; hosts join and leave while the
pool serves. The front door asks this collection, not a host, for what spans them: the
devices, the workers, the spares of a device, the workers that exited, the arbiter a
device's sessions are attached at.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Callable, Iterator

__all__ = ["HostWorkers", "Hosts"]


class HostWorkers:
    """What every kind of host does alike with its ``workers`` (a dict by worker id) and
    ``devices``, given its own ``spawn(device)``."""

    devices: list[str]
    workers: dict[str, Any]

    def spawn(self, device: str) -> Any:   # pragma: no cover - each host has its own
        raise NotImplementedError

    def spares(self, device: str) -> list[Any]:
        """*device*'s workers without a session (ready or still starting)."""
        return [w for w in self.workers.values()
                if w.device == device and w.session is None and not w.given_up]

    def keep_spares(self, wanted: Callable[[str], int]) -> None:
        """Start workers until each device has *wanted(device)* spares."""
        have = dict.fromkeys(self.devices, 0)
        for worker in self.workers.values():   # (one pass: the front door calls this often)
            if worker.session is None and not worker.given_up and worker.device in have:
                have[worker.device] += 1
        for device in self.devices:
            for _ in range(wanted(device) - have[device]):
                self.spawn(device)

    def late_starts(self, before: float) -> list[Any]:
        """Spares started before *before* (``time.monotonic``) that have not said ready."""
        return [w for w in self.workers.values() if w.port is None and w.session is None
                and not w.given_up and w.started < before]

    def give_up(self, worker: Any) -> None:
        """Stop waiting for *worker*'s ready: it is ended, and no spare any more (its
        process is collected as any other's, by ``exited``)."""
        worker.given_up = True
        worker.end()


class Hosts:
    """The pool's hosts by name ("" for a single-host pool's own)."""

    def __init__(self) -> None:
        self._hosts: dict[str, Any] = {}
        self._by_device: dict[str, Any] = {}
        #: every device of every host, in the order the hosts joined (kept, not rebuilt:
        #: placement reads it at every hello)
        self.devices: list[str] = []

    def add(self, name: str, host: Any) -> None:
        if name in self._hosts:
            raise ValueError(f"host {name!r} is already in the pool")
        self._hosts[name] = host
        for device in host.devices:
            self._by_device[device] = host
        self.devices = [d for h in self._hosts.values() for d in h.devices]

    def remove(self, name: str) -> Any:
        host = self._hosts.pop(name)
        for device in host.devices:
            self._by_device.pop(device, None)
        self.devices = [d for h in self._hosts.values() for d in h.devices]
        return host

    def get(self, name: str) -> Any | None:
        return self._hosts.get(name)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._hosts.values()))

    def __len__(self) -> int:
        return len(self._hosts)

    def of(self, device: str) -> Any | None:
        """The host of *device* (None: no host of the pool has it, or no longer)."""
        return self._by_device.get(device)

    # ------------------------------------------------------------ workers
    @property
    def workers(self) -> dict[str, Any]:
        """Every host's workers by id (a new dict: for reading)."""
        return {wid: w for host in self._hosts.values() for wid, w in host.workers.items()}

    def has(self, worker: Any) -> bool:
        """Is *worker* still one of its host's (not reaped, its host not lost)?"""
        host = self._by_device.get(worker.device)
        return host is not None and host.workers.get(worker.wid) is worker

    def spares(self, device: str) -> list[Any]:
        host = self._by_device.get(device)
        return host.spares(device) if host is not None else []

    def keep_spares(self, wanted: Callable[[str], int]) -> None:
        for host in self:
            host.keep_spares(wanted)

    def late_starts(self, before: float) -> list[Any]:
        """Every host's spares started before *before* that have not said ready."""
        return [w for host in self for w in host.late_starts(before)]

    def give_up(self, worker: Any) -> None:
        host = self._by_device.get(worker.device)
        if host is not None:
            host.give_up(worker)

    def exited(self) -> Iterator[tuple[Any, int]]:
        """Workers whose process has exited on any host (see WorkerHost.exited)."""
        return chain.from_iterable(host.exited() for host in self)

    # ------------------------------------------------------------ arbiters
    def arbiter_of(self, device: str) -> Any | None:
        """The arbiter that decides for *device* (None: policy none, or the host is gone)."""
        host = self._by_device.get(device)
        return host.arbiter if host is not None else None

    def set_weights(self, weights: dict[str, float]) -> None:
        for host in self:
            if host.arbiter is not None:
                host.arbiter.set_weights(weights)

    def arbiter_snapshot(self) -> dict[str, Any]:
        """Every device's arbiter snapshot, by the pool's device names."""
        snapshot: dict[str, Any] = {}
        for host in self:
            if host.arbiter is not None:
                snapshot.update(host.arbiter.snapshot)
        return snapshot

    # ------------------------------------------------------------ ending
    def stop_workers(self) -> None:
        for host in self:
            host.stop_workers()

    def close(self) -> None:
        for host in self:
            host.close()
