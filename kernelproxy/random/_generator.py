"""``cupy.random._generator``: RandomState, a generator in the session's worker, and the
per-device global states that ``cupy.random``'s functions draw from.

As in CuPy, ``_random_states`` maps a device id to its global RandomState and is
looked up on every call, so code that swaps the dict (``cupy.testing.fix_random``)
or sets a state (``set_random_state``) is obeyed. Seeds are reduced to one integer
here by CuPy's rule (an array by its MD5 hash, ``None`` by the OS's entropy), so a
bad seed fails at the call and the worker receives a plain integer.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np

from ..ndarray import ndarray as remote_array
from ..cuda import get_device_id
from ..state import active_session
from ..remote_object import RemoteObject
from .curand import CURAND_RNG_PSEUDO_DEFAULT

__all__ = ["RandomState", "get_random_state", "set_random_state", "reset_states", "seed"]

_UINT64 = 1 << 64


def _seed_value(seed: Any) -> int:
    """The one integer a seed stands for (CuPy's rule)."""
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, np.ndarray):
        return int(hashlib.md5(seed, usedforsecurity=False).hexdigest()[:16], 16)
    if isinstance(seed, remote_array):
        raise TypeError("a seed is a host value: pass an int or a NumPy array, not a cupy.ndarray")
    value = np.asarray(seed)
    if value.dtype.kind not in "biu":
        raise TypeError("Seed must be an integer.")
    value = int(value)
    if not 0 <= value < _UINT64:
        raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
    return value


class RandomState(RemoteObject, remote="random.RandomState"):
    """``cupy.random.RandomState``: a cuRAND generator of the session's worker.

    Its methods are CuPy's (``normal``, ``randint``, ``choice``, ...); each is one
    queued op whose result is a remote array, a 0-d one where ``size`` is None.
    """

    def __init__(self, seed: Any = None, method: int | None = None) -> None:
        self.method = CURAND_RNG_PSEUDO_DEFAULT if method is None else method
        self._create((_seed_value(seed),), {"method": self.method})

    def seed(self, seed: Any = None) -> None:
        """Reset the generator's state from *seed* (see :func:`cupy.random.seed`)."""
        self._call("seed", _seed_value(seed))

    def shuffle(self, a: Any) -> None:
        """Shuffle the remote array *a* in place along its first axis."""
        if not isinstance(a, remote_array):
            raise TypeError("The array must be cupy.ndarray")
        self._call("shuffle", a)

    def rand(self, *size: Any, **kwarg: Any) -> Any:
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"rand() got unexpected keyword arguments {', '.join(kwarg)}")
        return self._call("random_sample", size=size, dtype=dtype)

    def randn(self, *size: Any, **kwarg: Any) -> Any:
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"randn() got unexpected keyword arguments {', '.join(kwarg)}")
        return self._call("normal", size=size, dtype=dtype)


def seed(seed: Any = None) -> None:
    """``cupy.random.seed``: reseed the current device's global generator."""
    get_random_state().seed(seed)


_random_states: dict[int, Any] = {}


def reset_states() -> None:
    """Forget every global generator; the next call makes a fresh one."""
    global _random_states
    _random_states = {}


def get_random_state() -> Any:
    """The current device's global RandomState, made (seeded by ``CUPY_SEED`` if set) on
    first use, and again when the one there belongs to another session than the active
    one (a session that ended, or another session activated in this process)."""
    device = get_device_id()
    rs = _random_states.get(device)
    if rs is None:   # setdefault: of threads racing here, all get the first one made
        rs = _random_states.setdefault(device, _new_global_state())
    elif isinstance(rs, RandomState) and rs._s is not active_session():
        rs = _random_states[device] = _new_global_state()
    return rs


def _new_global_state() -> RandomState:
    env_seed = os.getenv("CUPY_SEED")
    return RandomState(None if env_seed is None else np.uint64(int(env_seed)))


def set_random_state(rs: Any) -> None:
    """Make *rs* the current device's global RandomState."""
    if not isinstance(rs, RandomState):
        raise TypeError(f"Random state must be an instance of RandomState. Actual: {type(rs)}")
    _random_states[get_device_id()] = rs


def _check_and_get_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.char not in ("f", "d"):
        raise TypeError("cupy.random only supports float32 and float64")
    return dtype
