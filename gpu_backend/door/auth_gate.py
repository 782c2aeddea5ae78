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
the log at most every ``LOG_EVERY`` seconds, by the front door's loop (:meth:`AuthGate.log_summary`
on every turn: refusals that cost no hash never reach :meth:`AuthGate.finished`).

Everything kept here is bounded whatever clients send, since a client chooses the names
(and, over tcp, can have many sources): a flood of unique names left 400 bytes behind per
hello (+118 MB after 300 000) in a summary keyed by name. The back-off tables and the memory
of wrong tokens keep at most ``REMEMBERED`` entries each; the summary keeps exact totals by
reason and only the ``TOP_KEPT`` names and sources refused most (:class:`HeavyHitters`);
the tarpit holds at most ``HELD_AT_MOST`` replies and ``HELD_BYTES`` bytes.
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

from gpu_backend.protocol.codec import packb
from gpu_backend.protocol.errors import AuthenticationError, SignInThrottledError
from gpu_backend.runtime.wake_queue import WakeQueue
from gpu_backend.accounting.users import User, UserRegistry, token_user, verify_token

__all__ = ["AuthGate", "HeavyHitters", "HeldRefusals", "Pending", "THROTTLED", "BUSY"]

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
#: The shortest time between two summaries of refusals in the log (seconds).
LOG_EVERY = 10.0
#: Names and sources the summary counts one by one (each table; the rest only in its totals),
#: and the characters of a name or source it keeps (a name chosen by a client).
TOP_KEPT = 32
KEY_CHARS = 64
#: Refusals held at once at most, and their bytes at most (beyond either, they are answered
#: at once), and the longest one is held (seconds): the tarpit (HeldRefusals). An entry counts
#: HELD_ENTRY_BYTES (a tuple, a float, an int, a place in the heap, its identity's header)
#: and its identity's and its packed reply's bytes, as if the reply were its own; the replies
#: differ only in the wait they name and are shared (the last HELD_REPLIES of them), so
#: 10 000 held count 3 MB and take 1.7 MB with ZeroMQ's own 5-byte identities (tracemalloc,
#: CPython 3.11). Identities a client sets (up to 255 bytes) meet HELD_BYTES first.
HELD_AT_MOST = 10_000
HELD_BYTES = 4 << 20
HELD_ENTRY_BYTES = 170
HELD_REPLIES = 256
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


class HeavyHitters:
    """The keys counted most often, in at most *size* entries: the space-saving algorithm
    (Metwally, Agrawal, El Abbadi, 2005). A key not in the table takes the place of the one
    with the smallest count and inherits that count (plus one) as a possible overcount, its
    ``error``. So a key counted more than ``total / size`` times is always in the table, and
    ``count - error`` is never more than its true count. Clients choose the keys (user names,
    addresses): a table of every one grew by 400 bytes a request under a flood of unique
    names; this one stays at *size* entries of at most KEY_CHARS characters."""

    def __init__(self, size: int = TOP_KEPT) -> None:
        self.size = size
        self.total = 0   # every key added (exact)
        self._counts: dict[str, int] = {}
        self._errors: dict[str, int] = {}
        self._low = 0                   # the smallest count at the last scan, and the keys
        self._lowest: list[str] = []   # that had it then (see _smallest)

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, key: str) -> None:
        key = key[:KEY_CHARS]
        self.total += 1
        if key in self._counts:
            self._counts[key] += 1
            return
        floor = 0
        if len(self._counts) >= self.size:
            smallest = self._smallest()
            floor = self._counts.pop(smallest)
            del self._errors[smallest]
        self._counts[key] = floor + 1
        self._errors[key] = floor

    def _smallest(self) -> str:
        """A key with the smallest count. Counts only grow and a new key starts above the
        smallest, so a key that had the smallest count at the last scan and still has it is
        one: under a flood of new keys, each scan of the table serves *size* of them (a scan
        for each cost 5 us a refusal)."""
        while self._lowest:
            key = self._lowest.pop()
            if self._counts.get(key) == self._low:
                return key
        self._low = min(self._counts.values())
        self._lowest = [key for key, count in self._counts.items() if count == self._low]
        return self._lowest.pop()

    def top(self, n: int) -> list[tuple[str, int]]:
        """The *n* keys with the highest certain counts (``count - error``, never more than
        the key's true count), each with that count, highest first."""
        sure = ((key, count - self._errors[key]) for key, count in self._counts.items())
        return sorted(sure, key=lambda kv: -kv[1])[:n]

    def clear(self) -> None:
        self.total = 0
        self._counts.clear()
        self._errors.clear()
        self._lowest.clear()


class RefusalSummary:
    """The refusals since the last summary in the log: exact totals by reason (our own few
    words), and the names and sources refused most (client-chosen: :class:`HeavyHitters`)."""

    SHOWN = 3

    def __init__(self) -> None:
        self.by_reason: Counter[str] = Counter()
        self.names = HeavyHitters()
        self.sources = HeavyHitters()

    def __bool__(self) -> bool:
        return bool(self.by_reason)

    def count(self, reason: str, name: str, source: str) -> None:
        self.by_reason[reason] += 1
        self.names.add(name)
        self.sources.add(source)

    def line(self, seconds: float) -> str:
        """One line for the log; names and sources escaped (repr) and cut to KEY_CHARS."""
        def shown(table: HeavyHitters) -> str:
            return ", ".join(f"{key!r} {n}" for key, n in table.top(self.SHOWN))
        reasons = ", ".join(f"{reason} {n}" for reason, n in self.by_reason.most_common())
        return (f"refused {sum(self.by_reason.values())} sign-ins in the last {seconds:.0f} s "
                f"({reasons}); names refused most (at least): {shown(self.names)}; "
                f"sources: {shown(self.sources)}")

    def clear(self) -> None:
        self.by_reason.clear()
        self.names.clear()
        self.sources.clear()


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
        #: refusals since the last summary in the log (bounded: RefusalSummary)
        self._since_log = RefusalSummary()

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
        return [self._settle(pending) for pending in self._done.take()]

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
        self._since_log.count(reason, name, source or "?")

    def log_summary(self) -> None:
        """The refusals since the last summary, in one line, if LOG_EVERY seconds have gone
        by since it: the front door's loop calls this on every turn (never a line per
        refusal: a flood would fill the log)."""
        now = self.clock()
        if now - self._logged_at < LOG_EVERY:
            return
        if self._since_log:
            log.warning("%s", self._since_log.line(now - self._logged_at))
            self._since_log.clear()
        self._logged_at = now


class HeldRefusals:
    """Refusals that ask their client to wait (:class:`SignInThrottledError`), held by the
    front door until the wait is over and then sent saying "now": the tarpit. A client that
    sends its next request when answered (as a flood's connections do) then sends one per
    back-off period. Each is kept packed, with its client's identity, and the replies, which
    differ only in the wait they name, are kept once each: at most HELD_AT_MOST held and
    HELD_BYTES in all (a reply as a dict of its own cost 560 bytes, and 100 000 were
    allowed); beyond, the caller answers at once. Called from the front door's loop only."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._held: list[tuple[float, int, bytes, bytes]] = []
        self._order = itertools.count()
        self._replies: dict[bytes, bytes] = {}   # each packed reply once (HELD_REPLIES at most)
        #: the bytes held, as HELD_BYTES counts them (no fewer than they take)
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, ident: bytes, reply: dict, wait: float) -> bool:
        """Keep *reply* to *ident* for *wait* seconds (at most HELD_LONGEST); False when too
        many, or too many bytes, are held (the caller answers at once)."""
        data = packb({**reply, "retry_after": 0.0})
        cost = HELD_ENTRY_BYTES + len(ident) + len(data)
        if len(self._held) >= HELD_AT_MOST or self.bytes + cost > HELD_BYTES:
            return False
        if len(self._replies) >= HELD_REPLIES:
            self._replies.clear()   # (those held keep theirs)
        data = self._replies.setdefault(data, data)
        due = self.clock() + min(max(wait, 0.0), HELD_LONGEST)
        heapq.heappush(self._held, (due, next(self._order), ident, data))
        self.bytes += cost
        return True

    def due(self) -> list[tuple[bytes, bytes]]:
        """The replies whose wait is over (identity, packed reply), taken out, in the order
        they fall due."""
        now, ready = self.clock(), []
        while self._held and self._held[0][0] <= now:
            _due, _order, ident, data = heapq.heappop(self._held)
            self.bytes -= HELD_ENTRY_BYTES + len(ident) + len(data)
            ready.append((ident, data))
        return ready

    def next_in(self) -> float | None:
        """Seconds until the next is due, or None when none is held."""
        return max(0.0, self._held[0][0] - self.clock()) if self._held else None
