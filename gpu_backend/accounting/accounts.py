"""Users' quotas as the pool enforces them: sessions at once, and device memory grants.

The front door asks :class:`Accounts` at every hello (who is this, may they open
another session, with what memory limit and first grant) and whenever a
worker wants more memory for its session. The memory rule: the grants of a
user's sessions sum to at most the user's ``memory`` quota; each session's
grant grows on demand up to the session's own limit (docs/fair-share.md,
"Quotas"). Plain bookkeeping over the front door's tables, called from its one
thread.
"""

from __future__ import annotations

from typing import Iterable, Protocol

from gpu_backend.protocol.errors import QuotaExceededError
from gpu_backend.accounting.users import User, UserRegistry, format_size
from gpu_backend.worker.grants import grant_step

__all__ = ["Accounts", "MIN_GRANT"]

#: A session is opened only if at least this much of its user's memory quota is free.
MIN_GRANT = 1 << 20


class _Session(Protocol):
    """A session as the front door keeps it (or a hello waiting for its worker)."""
    user: str
    grant: int | None
    memory_limit: int
    closing: bool


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class Accounts:
    def __init__(self, registry: UserRegistry, default_limit: int) -> None:
        self.registry = registry
        self.default_limit = default_limit

    def authenticate(self, token: object) -> User:
        return self.registry.authenticate(token)

    def open_session(self, user: User, open_sessions: Iterable[_Session], asked: object) -> tuple[int, int | None]:
        """Check a hello of *user* against their quotas; returns the session's memory limit and
        its first grant (None: the user has no memory quota). Raises QuotaExceededError."""
        mine = [s for s in open_sessions if s.user == user.name]
        count = sum(not s.closing for s in mine)   # closed ones still hold memory until they end
        if user.sessions is not None and count >= user.sessions:
            raise QuotaExceededError(
                f"user {user.name} may have {_plural(user.sessions, 'session')} at once, and "
                f"{count} {'is' if count == 1 else 'are'} open: close one first")
        cap = user.memory if user.memory is not None else self.default_limit
        limit = asked if type(asked) is int and 0 < asked < cap else cap
        if user.memory is None:
            return limit, None
        free = user.memory - sum(s.grant or 0 for s in mine)
        if free < MIN_GRANT:
            exc = QuotaExceededError(
                f"user {user.name}'s device-memory quota of {format_size(user.memory)} is held "
                f"by their {_plural(len(mine), 'other session')}: free memory there, or close one")
            exc.memory_held = True   # (the pool may ask those sessions to hand back what they hold)
            raise exc
        return limit, min(limit, grant_step(user.memory), free)

    def grow(self, session: _Session, want: int,
             open_sessions: Iterable[_Session]) -> tuple[int, dict | None]:
        """A worker asks for *want* bytes in all for *session*; returns the grant and, if it
        falls short, why: the user's quota and what their other sessions hold (the worker
        names them in the session's OutOfMemoryError, worker.grants.out_of_memory_text)."""
        user = self.registry.get(session.user)
        limit = session.memory_limit
        current = session.grant or 0
        if user is None or user.memory is None:   # the quota was lifted: the session's limit rules
            session.grant = min(want, limit)
            return session.grant, None
        others = [s for s in open_sessions if s.user == session.user and s is not session]
        held = sum(s.grant or 0 for s in others)
        granted = max(current, min(want, limit, user.memory - held))
        session.grant = granted
        if granted >= want:
            return granted, None
        return granted, {"user": user.name, "quota": user.memory, "others": held,
                         "sessions": len(others)}
