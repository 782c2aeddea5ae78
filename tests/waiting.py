"""Waiting in tests for something another process or thread does, without a fixed sleep."""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["until"]


def until(predicate: Callable[[], bool], seconds: float = 5.0, step: float = 0.001) -> bool:
    """Whether *predicate* came true within *seconds*, looking every *step* seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False
