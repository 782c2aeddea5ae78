"""``cupy.random._permutations``: shuffles and permutations by the global RandomState."""

from __future__ import annotations

from typing import Any

from . import _generator

__all__ = ["shuffle", "permutation"]


def shuffle(a: Any) -> None:
    """Shuffle the remote array *a* in place along its first axis."""
    return _generator.get_random_state().shuffle(a)


def permutation(a: Any) -> Any:
    """A permuted copy of *a*, or a permutation of ``arange(a)``."""
    return _generator.get_random_state().permutation(a)
