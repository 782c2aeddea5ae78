"""Two threads working one session at once (kernelproxy/session.py: threads share a
session), as the fast path's and early replay's tests drive them."""

from __future__ import annotations

import threading
from typing import Callable

#: the factor each thread's loop scales by
FACTORS = (2.0, 5.0)


def values_of_two_threads(step: Callable[[float], float], steps: int) -> dict[float, list]:
    """*step(factor)* run *steps* times in a thread per factor of FACTORS, both at once:
    each factor's values, in order. A thread's error is raised here."""
    errors: list = []
    results: dict[float, list] = {}

    def work(factor: float) -> None:
        try:
            results[factor] = [step(factor) for _ in range(steps)]
        except Exception as exc:   # (raised below, in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f,)) for f in FACTORS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return results
