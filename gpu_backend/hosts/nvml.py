"""NVML's figures of one GPU (utilisation, memory in use), where NVML can be read.

The pool samples its devices (:mod:`gpu_backend.hosts.device_samples`); for a GPU the driver's
own counters say what no accounting of ours can: how busy the GPU was (including other
processes' work) and how much of its memory is in use. CuPy exposes the memory
(``runtime.memGetInfo``) but not the utilisation, and the front door must not import
CuPy at all (a CUDA context in the pool's process), so this reads NVML through
``nvidia-ml-py`` (the ``pynvml`` module: pure Python over the driver's libnvidia-ml).
It is optional: without the package, or without a driver, :attr:`NvmlReader.status`
says why and every read answers None; nothing raises.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["NvmlReader", "NO_PACKAGE"]

log = logging.getLogger("gpu_backend.hosts.nvml")

#: what the status says where the package is missing
NO_PACKAGE = "nvidia-ml-py is not installed (pip install nvidia-ml-py, or gpu-workbench[nvml])"


class NvmlReader:
    """Opened once by the pool, if it has a GPU device; read from its loop's thread only."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: dict[tuple[str | None, int], Any] = {}
        try:
            import pynvml   # (nvidia-ml-py's module)
        except ImportError:
            self.status = NO_PACKAGE
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...: say which
            self.status = f"NVML did not start: {exc}"
            return
        self._nvml = pynvml
        #: "ok" while NVML answers, else why it does not
        self.status = "ok"

    def read(self, bus_id: str | None, index: int) -> tuple[float | None, int | None, int | None]:
        """(utilisation 0 to 1, memory used, memory total) of the GPU with PCI bus id
        *bus_id* (what its worker reported), or of NVML's GPU *index* when the bus id is
        not known yet; Nones when NVML cannot say."""
        if self._nvml is None:
            return None, None, None
        nvml = self._nvml
        try:
            handle = self._handle(bus_id, index)
            rates = nvml.nvmlDeviceGetUtilizationRates(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        except Exception as exc:  # a GPU fallen off the bus, a driver reset: keep serving
            if self.status == "ok":
                log.warning("NVML cannot read GPU %s: %s", bus_id or index, exc)
            self.status = f"NVML cannot read this GPU: {exc}"
            return None, None, None
        self.status = "ok"
        return rates.gpu / 100.0, int(memory.used), int(memory.total)

    def _handle(self, bus_id: str | None, index: int) -> Any:
        key = (bus_id, index)
        if key not in self._handles:
            nvml = self._nvml
            handle = None
            if bus_id:
                try:   # CUDA's numbering (CUDA_VISIBLE_DEVICES, fastest first) is not NVML's
                    handle = nvml.nvmlDeviceGetHandleByPciBusId(bus_id.encode())
                except Exception:  # an id NVML spells otherwise: fall back on the index
                    handle = None
            self._handles[key] = handle if handle is not None else nvml.nvmlDeviceGetHandleByIndex(index)
        return self._handles[key]

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # already shut, or the driver went away
                pass
            self._nvml = None
