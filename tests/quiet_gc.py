"""No cyclic garbage collection while a test counts what a loop did.

A collection that drops an array of an earlier test adds its free record to the stretch
being queued, which then differs from its loop's others: correct, but one replay fewer than
a test that counts replays expects (docs/stretch-replay.md).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

__all__ = ["no_collection"]


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
