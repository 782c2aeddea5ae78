"""The arbiter's decisions as they happen, for diagnosis: ``GPUWB_ARBITER_TRACE=FILE``.

Every worker message the arbiter acts on is one JSON line: the time (``perf_counter``),
the session and its user, the message and the policy's answer (grants, yields, ready hints),
and for a request the policy's view before it answered (users' virtual times, the holder). An
interactive user's tail latency comes from the arrivals that did not preempt the holder
(a yield after a quantum instead of at once): this log shows them and what the policy
believed then. Off unless the variable is set; nothing is written on the hot path then.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import IO

__all__ = ["DecisionTrace", "decision_trace"]


class DecisionTrace:
    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def decided(self, session: str, user: str | None, msg: dict, actions: list,
                state: dict | None = None, vt: dict | None = None) -> None:
        """*state*: the policy's snapshot before it decided (kept for requests: why one
        waited shows in the users' virtual times); *vt*: every user's virtual time after it
        (what the policy charged: tests/gpu_backend/test_share_pool.py reads the shares)."""
        answer = [{"a": type(a).__name__.lower(), **dataclasses.asdict(a)} for a in actions]
        entry = {"t": time.perf_counter(), "session": session, "user": user, "msg": msg,
                 "actions": answer}
        if state is not None:
            entry["state"] = state
        if vt is not None:
            entry["vt"] = vt
        self._out.write(json.dumps(entry, default=str) + "\n")

    def close(self) -> None:
        self._out.close()


def decision_trace(path: str | None) -> DecisionTrace | None:
    """A trace appended to *path* (line-buffered), or None without a path."""
    return DecisionTrace(open(path, "a", buffering=1)) if path else None
