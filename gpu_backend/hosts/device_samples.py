"""Each device's busy time and memory over the last minutes, sampled by the pool.

Users of jupyterlab-nvdashboard expect to watch the GPU's utilisation and memory move
while their cells run. The pool knows two things about every device, GPU or not, from
its own accounting: the device time its workers measured (so the part of each interval
the device ran sessions' work: ``busy``) and the memory its sessions hold. On a GPU,
NVML (:mod:`gpu_backend.hosts.nvml`, optional) adds the driver's utilisation and memory in
use, which count every process on the GPU. The front door's loop calls
:meth:`DeviceSampler.maybe_sample` every turn; a sample is taken every ``step`` seconds
and the last ``keep`` seconds are kept, so a status request that asks for history gets
them (``device_history``) and the metrics the latest (``latest``). Plain bookkeeping,
called from the loop's one thread.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

__all__ = ["DeviceSampler", "SAMPLE_STEP", "NOT_A_GPU"]

#: seconds between samples: the Lab panel's plots are 5 minutes wide, 150 points
SAMPLE_STEP = 2.0
#: seconds of samples kept (a status may ask for up to 600 s of history)
KEEP_SECONDS = 600.0
#: the ``nvml`` note of a device that is not a GPU
NOT_A_GPU = "not a GPU: the host's CPU (busy and memory are the pool's own accounting)"
#: the ``nvml`` note of a device of another host (a pool across hosts)
REMOTE = ("on another host of the pool: NVML is not read there; busy and memory are the "
          "pool's own accounting")


class DeviceSampler:
    """Samples of *devices* (the pool's specs, ``cuda:K`` or ``cpu:K``). *nvml*: a factory
    of the NVML reader (default :class:`~gpu_backend.hosts.nvml.NvmlReader`), called once, and
    only if a device is a GPU."""

    def __init__(self, devices: list[str], step: float = SAMPLE_STEP, keep: float = KEEP_SECONDS,
                 nvml: Callable[[], Any] | None = None) -> None:
        self.devices = list(devices)
        self.step = step
        #: (time, {device: (busy, memory, utilisation, NVML memory)}), oldest first
        self._samples: deque = deque(maxlen=int(keep / step) + 1)
        self._previous: tuple[float, dict[str, float]] | None = None   # device seconds then
        self._due = 0.0
        self.memory_total: dict[str, int | None] = dict.fromkeys(self.devices)
        self._nvml = None
        if any(d.startswith("cuda:") for d in self.devices):
            if nvml is None:
                from gpu_backend.hosts.nvml import NvmlReader
                nvml = NvmlReader
            self._nvml = nvml()

    def set_devices(self, devices: list[str]) -> None:
        """The pool's devices changed (a host joined or was lost, across hosts): sample
        these from now on (NVML is read only for this host's own GPUs, ``cuda:K``)."""
        self.devices = list(devices)
        for device in self.devices:
            self.memory_total.setdefault(device, None)

    def note(self, device: str) -> str:
        """Whether NVML is read for *device*: "ok", or why not."""
        if "/" in device:
            return REMOTE
        if not device.startswith("cuda:"):
            return NOT_A_GPU
        return self._nvml.status if self._nvml is not None else "NVML is not read"

    # -- what the front door calls ------------------------------------------------------
    def maybe_sample(self, door: Any) -> None:
        """Take a sample of *door*'s devices if ``step`` seconds passed since the last."""
        now = time.monotonic()
        if now < self._due:
            return
        # every step from the first, unless the loop fell a whole step behind
        self._due = self._due + self.step if now - self._due < self.step else now + self.step
        memory = dict.fromkeys(self.devices, 0)
        for session in list(door.sessions.values()):
            device = session.worker.device
            memory[device] = memory.get(device, 0) + (session.usage.get("memory") or 0)
        facts = {}
        for worker in list(door.hosts.workers.values()):
            if worker.info and worker.device not in facts:
                facts[worker.device] = (worker.info, worker.runtime or {})
        for device, (info, _) in facts.items():
            if info.get("memory_total") is not None:
                self.memory_total[device] = info["memory_total"]
        bus_ids = {d: runtime.get("pci_bus_id") or None for d, (_, runtime) in facts.items()}
        self.sample(memory, door.usage.device_seconds(), bus_ids)

    def sample(self, memory: dict[str, int], device_seconds: dict[str, float],
               bus_ids: dict[str, str | None] | None = None, now: float | None = None) -> None:
        """One sample: each device's sessions' *memory*, and its *device_seconds* since the
        pool started (the busy part is their increase over the time since the last sample;
        None at the first)."""
        now = time.time() if now is None else now
        previous, self._previous = self._previous, (now, dict(device_seconds))
        row = {}
        for device in self.devices:
            busy = None
            if previous is not None and now > previous[0]:
                used = device_seconds.get(device, 0.0) - previous[1].get(device, 0.0)
                # a worker reports its device time every half second, so an interval can be
                # credited a little of the next: a fraction, never more than all of it
                busy = round(min(1.0, max(0.0, used / (now - previous[0]))), 4)
            utilization = nvml_memory = None
            if self._nvml is not None and device.startswith("cuda:"):
                index = int(device.partition(":")[2])
                utilization, nvml_memory, total = self._nvml.read((bus_ids or {}).get(device), index)
                if total is not None:
                    self.memory_total[device] = total
            row[device] = (busy, memory.get(device, 0), utilization, nvml_memory)
        self._samples.append((now, row))

    # -- what the status and the metrics read --------------------------------------------
    def history(self, seconds: float, now: float | None = None) -> dict[str, dict]:
        """Per device, the samples of the last *seconds* (``DeviceSamples``)."""
        now = time.time() if now is None else now
        recent = [(t, row) for t, row in self._samples if t >= now - seconds]
        out = {}
        for device in self.devices:
            gpu = self._nvml is not None and device.startswith("cuda:")
            values = [row.get(device, (None, None, None, None)) for _, row in recent]
            out[device] = {
                "t0": round(recent[0][0], 3) if recent else round(now, 3), "step": self.step,
                "busy": [v[0] for v in values], "memory": [v[1] for v in values],
                "utilization": [v[2] for v in values] if gpu else None,
                "nvml_memory": [v[3] for v in values] if gpu else None,
                "memory_total": self.memory_total.get(device), "nvml": self.note(device),
            }
        return out

    def latest(self) -> dict[str, dict]:
        """Per device, the last sample (for the metrics): busy, memory, utilization,
        nvml_memory, memory_total (Nones before the first sample)."""
        last = self._samples[-1][1] if self._samples else {}
        return {device: dict(zip(("busy", "memory", "utilization", "nvml_memory"),
                                 last.get(device, (None, None, None, None))),
                             memory_total=self.memory_total.get(device))
                for device in self.devices}

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.close()
