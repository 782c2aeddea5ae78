"""``cupy.random._generator_api``: ``cupy.random.Generator`` in the session's worker."""

from __future__ import annotations

from typing import Any

from ..remote_object import RemoteObject
from ._bit_generator import BitGenerator, XORWOW

__all__ = ["Generator", "default_rng"]


class Generator(RemoteObject, remote="random.Generator"):
    """NumPy's Generator interface over one of cuRAND's bit generators, in the pool.

    Its methods (``random``, ``integers``, ``standard_normal``, ...) are CuPy's; each is
    one queued op whose result is a remote array (``out=`` fills a remote array).
    """

    def __init__(self, bit_generator: Any) -> None:
        self._bit_generator = bit_generator
        self._create((bit_generator,), {})

    @property
    def bit_generator(self) -> Any:
        return self._bit_generator

    @bit_generator.setter
    def bit_generator(self, value: Any) -> None:
        self._set("bit_generator", value)
        self._bit_generator = value


def default_rng(seed: Any = None) -> Generator:
    """A Generator over XORWOW seeded by *seed*; a BitGenerator is wrapped, a Generator
    returned as is (CuPy's rule)."""
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    return Generator(XORWOW(seed))
