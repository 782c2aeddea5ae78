"""Devices a session worker can run on: ``numpy`` (host) or ``cupy`` (a GPU).

May import: ``protocol``, NumPy, SciPy; CuPy only in ``cupy_device``, ``cupy_graphs`` and
``cupy_capture``.
"""

from __future__ import annotations

from .base import Device
from .numpy_device import NumpyDevice

__all__ = ["Device", "NumpyDevice", "open_device", "parse_devices", "preload_gpu"]


def open_device(spec: str) -> Device:
    """Open ``"cpu"`` or ``"cuda:K"`` in this process (a session worker)."""
    if spec == "cpu" or spec.startswith("cpu:"):
        return NumpyDevice(int(spec.partition(":")[2] or 0))
    if spec.startswith("cuda:"):
        from .cupy_device import CupyDevice
        return CupyDevice(int(spec.partition(":")[2]))
    raise ValueError(f"unknown device {spec!r}")


def preload_gpu() -> None:
    """Import ahead what opening a GPU imports, touching no GPU (the pool's zygote, before it
    forks GPU workers)."""
    from .cupy_device import preload
    preload()


def parse_devices(text: str) -> list[str]:
    """Turn the ``--devices`` setting into device specs.

    ``auto`` takes every GPU CuPy sees, else one NumPy device; ``cpu`` is one
    NumPy device; a comma list mixes GPU indices and ``cpu`` entries (several
    ``cpu`` entries make several NumPy devices, which tests use for placement).
    """
    text = text.strip()
    if text == "auto":
        from .cupy_device import gpu_count
        n = gpu_count()
        return [f"cuda:{k}" for k in range(n)] if n else ["cpu:0"]
    specs: list[str] = []
    cpus = 0
    for item in (part.strip() for part in text.split(",")):
        if item == "cpu":
            specs.append(f"cpu:{cpus}")
            cpus += 1
        elif item.isdigit():
            specs.append(f"cuda:{int(item)}")
        else:
            raise ValueError(f"bad device {item!r} in {text!r}: use auto, cpu or GPU indices")
    if not specs or len(set(specs)) != len(specs):
        raise ValueError(f"bad device list {text!r}")
    return specs
