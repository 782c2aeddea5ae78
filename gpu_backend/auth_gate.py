"""Sign-in checks off the front door's loop: bounded hashing, back-off, a memory of wrong tokens.

A users file keeps each token's scrypt hash, and checking a token costs a full scrypt (about
0.05-0.2 s of a core). Done on the front door's loop, 300 connections sending wrong tokens
for a real user's name held that loop for 25 s: heartbeats went unanswered and a bystander's
session was declared lost. So the loop never hashes. It asks the gate, which answers at once
when it can (a token verified before; a malformed one; no such user; a token that failed a
moment ago; a name or a source that is backing off) and otherwise hands the hash to a small
pool of threads (``hashlib.scrypt`` releases the GIL), whose answer comes back to the loop
through :meth:`AuthGate.finished` when :attr:`AuthGate.wake_fd` becomes readable.

Back-off: after *k* failures in a row, a user name, and a source (an IP address for tcp
clients, the local user id for same-host ones), may be tried again only after
``min(BACKOFF_BASE * 2**(k-1), BACKOFF_CAP)`` seconds; a success resets both. (A refusal
that costs no hash, a token for no user or the wrong single token, counts against its
source.) At most one hash per name and one per source run at once, and at most ``QUEUE``
in all; anything more is refused at once. Wrong tokens are remembered (by their SHA-256)
for ``FAILED_MEMORY`` seconds, so a flood of one wrong token costs one hash. A refusal
that asks to wait (:class:`SignInThrottledError`) is held by the front door until the
wait is over (a tarpit): a client that sends its next hello when answered, as a flood's
connections do, sends one per back-off period, and costs the loop next to nothing.

The price: a user whose name is under such a flood and whose token has not been verified
since the pool started may be refused ("try again shortly") until the flood ends. A token
verified once is accepted at once for as long as its hash stands (the registry's cache),
so a user already signed in, or reconnecting, never notices. docs/security.md says so.

Refusals are counted by reason (:attr:`refusals`, in the pool's metrics) and summed up in
the log every ``LOG_EVERY`` seconds.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import logging
import time
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from .protocol.errors import AuthenticationError, SignInThrottledError
from .wake_queue import WakeQueue
from .users import User, UserRegistry, token_user, verify_token

__all__ = ["AuthGate", "HeldRefusals", "Pending", "THROTTLED", "BUSY"]

log = logging.getLogger("gpu_backend.auth")

#: Threads that hash tokens (each a core while it works).
THREADS = 2
#: Hashes waiting or running at most; more are refused at once.
QUEUE = 16
BACKOFF_BASE = 0.05
BACKOFF_CAP = 5.0
#: How long a wrong token is remembered (refused without hashing).
FAILED_MEMORY = 60.0
#: Names, sources and wrong tokens remembered at most (the oldest are forgotten).
REMEMBERED = 4096
LOG_EVERY = 10.0
#: Refusals held at once at most (beyond, they are answered at once), and the longest one is
#: held (seconds): the tarpit (HeldRefusals).
HELD_AT_MOST = 100_000
HELD_LONGEST = 5.0

WRONG = "wrong or missing token"
THROTTLED = "too many failed sign-ins for this user or from this address: try again in {:.2g} s"
BUSY = "too many sign-ins at once: try again shortly"
#: What a refusal for business asks the client to wait before it tries again (seconds).
BUSY_RETRY = 0.2


@dataclass
class Pending:
    """A check handed to the threads; :meth:`AuthGate.finished` returns it with its outcome."""
    context: Any
    user: User
    name: str
    source: str | None
    digest: bytes
    token: str = field(repr=False)
    outcome: User | AuthenticationError | None = None


class _Backoff:
    """Failures in a row and when the next try is allowed, per key (bounded, oldest dropped)."""

    def __init__(self) -> None:
        self.state: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self.busy: set[str] = set()

    def wait(self, key: str | None, now: float) -> float:
        if key is None:
            return 0.0
        entry = self.state.get(key)
        return max(0.0, entry[1] - now) if entry else 0.0

    def failed(self, key: str | None, now: float) -> None:
        if key is None:
            return
        count = self.state.pop(key, (0, 0.0))[0] + 1
        self.state[key] = (count, now + min(BACKOFF_BASE * 2 ** (count - 1), BACKOFF_CAP))
        while len(self.state) > REMEMBERED:
            self.state.popitem(last=False)

    def succeeded(self, key: str | None) -> None:
        if key is not None:
            self.state.pop(key, None)


class AuthGate:
    """Called only from the front door's loop (the threads only hash)."""

    def __init__(self, registry: UserRegistry, clock: Callable[[], float] = time.monotonic,
                 threads: int = THREADS) -> None:
        self.registry = registry
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gpuwb-auth")
        self._done: WakeQueue[Pending] = WakeQueue()   # checks finished, for the loop
        self._names = _Backoff()
        self._sources = _Backoff()
        self._failed: OrderedDict[bytes, float] = OrderedDict()   # sha256(token) -> until
        self._in_flight = 0
        #: refusals since the pool started, by reason (the metrics' gpuwb_auth_refusals_total)
        self.refusals: Counter[str] = Counter()
        #: tokens hashed since the pool started
        self.hashed = 0
        self._logged_at = clock()
        self._since_log: Counter[tuple[str, str, str]] = Counter()

    @property
    def wake_fd(self) -> int:
        """Readable when a check has finished (the loop polls it and calls :meth:`finished`)."""
        return self._done.fd

    # ------------------------------------------------------------ the loop's calls
    def check(self, token: object, source: str | None, context: Any = None) -> User | Pending:
        """The user *token* signs in as, at once; or a :class:`Pending` check that
        :meth:`finished` will return with *context*. Raises :class:`AuthenticationError`
        when refused at once."""
        user, to_verify = self.registry.screen(token)
        if to_verify is None and user is not None:
            self._sources.succeeded(source)   # (a client there holds a good token)
            return user   # (a token verified before: at once, whatever is backing off)
        now = self.clock()
        name = user.name if user is not None else token_user(token) or "?"
        wait = max(self._names.wait(user.name, now) if user is not None else 0.0,
                   self._sources.wait(source, now))
        if wait > 0:
            self._refuse("throttled", name, source, THROTTLED.format(wait), wait)
        if to_verify is None:   # refused without hashing (malformed, no such user, or the
            self._sources.failed(source, now)   # single token): a failure of its source
            self._refuse("wrong", name, source)
        assert isinstance(token, str) and user is not None
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        until = self._failed.get(digest)
        if until is not None and until > now:
            self._sources.failed(source, now)
            self._refuse("wrong", user.name, source)
        if (user.name in self._names.busy or (source is not None and source in self._sources.busy)
                or self._in_flight >= QUEUE):
            self._refuse("busy", user.name, source, BUSY, BUSY_RETRY)
        pending = Pending(context, user, user.name, source, digest, token)
        self._names.busy.add(user.name)
        if source is not None:
            self._sources.busy.add(source)
        self._in_flight += 1
        self._pool.submit(self._hash, pending, to_verify)
        return pending

    def finished(self) -> list[Pending]:
        """The checks that have finished, each with its ``outcome``: the :class:`User`, or
        the :class:`AuthenticationError` to answer with."""
        done = [self._settle(pending) for pending in self._done.take()]
        self.log_summary()
        return done

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._done.close()

    # ------------------------------------------------------------ inside
    def _hash(self, pending: Pending, token_hash: str) -> None:
        """In a thread: the scrypt, then a word to the loop."""
        try:
            ok = verify_token(pending.token, token_hash)
        except Exception:   # never: verify_token says False for anything malformed
            ok = False
        pending.outcome = pending.user if ok else None
        self._done.put(pending)

    def _settle(self, pending: Pending) -> Pending:
        now = self.clock()
        self.hashed += 1
        self._in_flight -= 1
        self._names.busy.discard(pending.name)
        if pending.source is not None:
            self._sources.busy.discard(pending.source)
        if pending.outcome is not None and self.registry.remember(pending.token, pending.user):
            self._names.succeeded(pending.name)
            self._sources.succeeded(pending.source)
            pending.outcome = self.registry.get(pending.name) or pending.user
        else:
            self._names.failed(pending.name, now)
            self._sources.failed(pending.source, now)
            self._failed.pop(pending.digest, None)
            self._failed[pending.digest] = now + FAILED_MEMORY
            while len(self._failed) > REMEMBERED:
                self._failed.popitem(last=False)
            self._count("wrong", pending.name, pending.source)
            pending.outcome = AuthenticationError(WRONG)
        pending.token = ""
        return pending

    def _refuse(self, reason: str, name: str, source: str | None, text: str = WRONG,
                retry_after: float | None = None) -> None:
        self._count(reason, name, source)
        if retry_after is None:
            raise AuthenticationError(text)
        exc = SignInThrottledError(text)
        exc.retry_after = retry_after
        raise exc

    def _count(self, reason: str, name: str, source: str | None) -> None:
        self.refusals[reason] += 1
        self._since_log[(reason, name, source or "?")] += 1

    def log_summary(self) -> None:
        """Every LOG_EVERY seconds, the refusals since the last summary (called by the loop)."""
        now = self.clock()
        if now - self._logged_at < LOG_EVERY or not self._since_log:
            return
        self._logged_at = now
        total = sum(self._since_log.values())
        top = ", ".join(f"{n}x {reason} for {name!r} from {source}"
                        for (reason, name, source), n in self._since_log.most_common(3))
        log.warning("refused %d sign-ins in the last %.0f s (%s)", total, LOG_EVERY, top)
        self._since_log.clear()


class HeldRefusals:
    """Refusals that ask their client to wait (:class:`SignInThrottledError`), held by the
    front door until the wait is over and then sent saying "now": the tarpit. A client that
    sends its next request when answered (as a flood's connections do) then sends one per
    back-off period. Called from the front door's loop only."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._held: list[tuple[float, int, bytes, dict]] = []
        self._order = itertools.count()

    def hold(self, ident: bytes, reply: dict, wait: float) -> bool:
        """Keep *reply* to *ident* for *wait* seconds (at most HELD_LONGEST); False when too
        many are held (the caller answers at once)."""
        if len(self._held) >= HELD_AT_MOST:
            return False
        due = self.clock() + min(max(wait, 0.0), HELD_LONGEST)
        heapq.heappush(self._held, (due, next(self._order), ident, {**reply, "retry_after": 0.0}))
        return True

    def due(self) -> list[tuple[bytes, dict]]:
        """The replies whose wait is over, taken out, in the order they fall due."""
        now, ready = self.clock(), []
        while self._held and self._held[0][0] <= now:
            _due, _order, ident, reply = heapq.heappop(self._held)
            ready.append((ident, reply))
        return ready

    def next_in(self) -> float | None:
        """Seconds until the next is due, or None when none is held."""
        return max(0.0, self._held[0][0] - self.clock()) if self._held else None
