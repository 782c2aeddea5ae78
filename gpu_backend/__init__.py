"""The GPU pool: front door, session workers, devices and the wire protocol.

The package's own names load when first used: :mod:`kernelproxy` imports
``gpu_backend.protocol`` (the only part a client may import), which must not bring the
pool's front door, ZeroMQ sockets and settings with it.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "LocalPool", "PoolSettings"]

#: where each public name lives (loaded on first use)
_WHERE = {"LocalPool": ".pool", "PoolSettings": ".config"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
