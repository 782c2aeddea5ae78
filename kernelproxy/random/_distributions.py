"""``cupy.random._distributions``: each distribution drawn from the current device's global
RandomState (``cupy.random.normal(...)`` is ``get_random_state().normal(...)``, as in CuPy)."""

from __future__ import annotations

from typing import Any

from gpu_backend.protocol import api

from . import _generator

__all__ = sorted(api.OBJECTS["random.RandomState"].keys() & set(api.RANDOM_DISTRIBUTIONS.split()))


def _from_global_state(name: str):
    def draw(*args: Any, **kwargs: Any) -> Any:
        return getattr(_generator.get_random_state(), name)(*args, **kwargs)

    draw.__name__ = draw.__qualname__ = name
    draw.__module__ = "cupy.random"
    draw.__doc__ = f"``cupy.random.{name}``: from the current device's global RandomState."
    return draw


globals().update({name: _from_global_state(name) for name in __all__})
