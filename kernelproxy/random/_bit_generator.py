"""``cupy.random._bit_generator``: cuRAND's device generators behind ``cupy.random.Generator``.

A seed is checked here the way CuPy checks it (it must make a
``numpy.random.SeedSequence``) and travels as is, so the worker derives the very
state local CuPy would; a SeedSequence travels as its entropy, spawn key and pool size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import ndarray as remote_array
from ..remote_object import RemoteObject

__all__ = ["BitGenerator", "XORWOW", "MRG32k3a", "Philox4x3210"]


class BitGenerator(RemoteObject):
    """A stream of random bits in the session's worker (the base of cuRAND's kinds)."""

    def __init__(self, seed: Any = None, *, size: int = -1) -> None:
        kwargs: dict[str, Any] = {} if size == -1 else {"size": size}
        if isinstance(seed, np.random.SeedSequence):
            kwargs.update(spawn_key=list(seed.spawn_key), pool_size=seed.pool_size)
            seed = seed.entropy
        else:
            if isinstance(seed, remote_array):
                seed = seed.get()
            np.random.SeedSequence(seed)   # CuPy's checks: a float or complex seed is a TypeError
        if not self._remote_class:
            raise NotImplementedError("BitGenerator is a base class: use XORWOW, MRG32k3a or "
                                      "Philox4x3210")
        self._create((seed,), kwargs)

    def random_raw(self, size: Any = None, output: bool = True) -> Any:
        """Raw 32-bit samples of the generator, as int32 (None when *output* is False)."""
        raw = self._call("random_raw", size)
        return raw if output else None


class XORWOW(BitGenerator, remote="random.XORWOW"):
    """cuRAND's XORWOW generator (CuPy's default)."""


class MRG32k3a(BitGenerator, remote="random.MRG32k3a"):
    """cuRAND's MRG32k3a generator."""


class Philox4x3210(BitGenerator, remote="random.Philox4x3210"):
    """cuRAND's Philox4_32_10 generator."""
