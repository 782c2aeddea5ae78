"""A client ↔ the pool's front door: open, keep, look at, close and find a session. One
``TypedDict`` per message; the package's docstring (``__init__``) says how they are read and
rendered, and every name is taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Literal, NotRequired, TypedDict

from .device_facts import DeviceInfo, RuntimeFacts
from .pool_status import (DeviceSamples, EndedSession, ShareHistory, StatusAccount, StatusDevice,
                          StatusHost, StatusSession, StatusSpin, StatusUser)

__all__ = ["HelloRequest", "HelloReply", "HeartbeatRequest", "HeartbeatReply", "StatusRequest",
           "StatusReply", "CloseRequest", "CloseReply", "EndRequest", "EndReply", "PingRequest",
           "PingReply", "ErrorReply", "WhereRequest", "WhereReply"]


class HelloRequest(TypedDict):
    """client → front door, after a ping: open a session. Answered with
    :class:`HelloReply` once a warm worker is assigned, or with :class:`ErrorReply`."""
    t: Annotated[Literal["hello"], "the message type"]
    v: Annotated[int, "the client's protocol version (PROTOCOL_VERSION; another is VersionMismatchError)"]
    token: Annotated[str, "who the user is: a users file's NAME.SECRET, or the pool's one shared token"]
    user: Annotated[str, "the client's label for itself (user@host; 64 characters kept): shown in status, not an identity"]
    label: NotRequired[Annotated[str, "what opens the session: the notebook's path (JPY_SESSION_NAME) or the script's name (the last 160 characters kept); shown to its user in status"]]
    memory_limit: NotRequired[Annotated[int | None, "the session's memory limit, bytes (default: the pool's; at most the user's quota)"]]
    apart_from: NotRequired[Annotated[list[str], "the user's own open sessions: place this one on a device none of them holds"]]


class HelloReply(TypedDict):
    """front door → client: the session is open; ops now go to its worker."""
    ok: Annotated[Literal[True], "the request succeeded"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key (32 random bytes): every message to the worker, heartbeat and close carries it"]
    worker_port: Annotated[int, "the worker's tcp port, on the front door's host unless worker_host says otherwise"]
    worker_host: NotRequired[Annotated[str, "the worker's host (a name or IP, IPv6 in brackets), in a pool across hosts (docs/cluster.md)"]]
    worker_ipc: Annotated[str | None, "the worker's Unix socket (unix://…), used by a client of the ipc:// door; None: none"]
    device: Annotated[DeviceInfo, "the worker's device"]
    runtime: Annotated[RuntimeFacts, "the device's CUDA facts, from which cupy.cuda answers"]
    lease_timeout: Annotated[float, "seconds without a heartbeat after which the pool ends the session"]
    memory_limit: Annotated[int, "the session's memory limit, bytes"]


class HeartbeatRequest(TypedDict):
    """client → front door, every ``lease_timeout / 4`` seconds from the client's heartbeat
    thread: the session is still in use."""
    t: Annotated[Literal["hb"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class HeartbeatReply(TypedDict):
    """front door → client: whether the session lives on."""
    ok: Annotated[Literal[True], "the request succeeded"]
    alive: Annotated[bool, "False: the session has ended (lease expired, worker stopped) or the key is wrong"]
    reason: NotRequired[Annotated[str, "why the session ended, when alive is False and the pool still knows (its last 200 ended sessions)"]]
    moves: NotRequired[Annotated[int, "how often the pool has moved the session to another worker (more than the client knows: ask where, WhereRequest)"]]


class StatusRequest(TypedDict):
    """client → front door (``%gpu status``, ``gpuwb status``, the Jupyter server
    extension's watcher): the pool's devices, users and sessions."""
    t: Annotated[Literal["status"], "the message type"]
    token: Annotated[str, "a user's token (any user may ask)"]
    history: NotRequired[Annotated[float, "also each device's per-user device seconds, and its samples (busy, memory, NVML), over this many seconds (0 < history <= 600)"]]


class StatusReply(TypedDict):
    """front door → client: the pool's status (``pool_status.build_status``; also what
    ``LocalPool.door.status()`` returns, less ``ok`` and ``you``)."""
    ok: Annotated[Literal[True], "the request succeeded"]
    address: Annotated[str, "the front door's tcp:// address"]
    local_address: Annotated[str | None, "its same-host ipc:// address, or None"]
    policy: Annotated[str, "the arbiter's policy: \"fair\", \"fifo\" or \"none\""]
    users_mode: Annotated[str, "\"file\" (a users file) or \"single\" (one shared token)"]
    devices: Annotated[list[StatusDevice], "one row per device"]
    users: Annotated[list[StatusUser], "one row per user and device with sessions or recent device time"]
    accounts: Annotated[list[StatusAccount], "one row per user of the pool, with sessions or not"]
    sessions: Annotated[list[StatusSession], "the open sessions (not those closing)"]
    ended: Annotated[list[EndedSession], "the last 50 sessions that ended"]
    lease_timeout: Annotated[float, "seconds without a heartbeat after which a session ends"]
    pid: Annotated[int, "the pool's process id"]
    spin: Annotated[StatusSpin, "the workers' spin slots"]
    uptime: Annotated[float, "seconds since the pool started"]
    hosts: Annotated[list[StatusHost] | None, "a pool across hosts: one row per host (None: a single-host pool)"]
    you: Annotated[str, "the user the token signed in as"]
    history: NotRequired[Annotated[dict[str, ShareHistory], "per device, its users' device seconds (when asked for)"]]
    device_history: NotRequired[Annotated[dict[str, DeviceSamples], "per device, its samples over the same seconds (when history is asked for)"]]


class CloseRequest(TypedDict):
    """client → front door, after telling its worker ``close``: end the session (its
    worker reports its last figures and exits)."""
    t: Annotated[Literal["close"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class CloseReply(TypedDict):
    """front door → client: answered whether or not the session was open."""
    ok: Annotated[Literal[True], "the request succeeded"]


class EndRequest(TypedDict):
    """client → front door (the Jupyter server extension, for the Lab panel's "End"): end
    one of the token's user's own sessions, whose key the asker need not hold. The pool
    kills its worker, as when its lease expires; a session of another user is refused with
    NotAllowedError."""
    t: Annotated[Literal["end"], "the message type"]
    token: Annotated[str, "the user's token: only that user's sessions may be ended"]
    session: Annotated[str, "the session's id"]


class EndReply(TypedDict):
    """front door → client: the answer to :class:`EndRequest`."""
    ok: Annotated[Literal[True], "the request succeeded"]
    ended: Annotated[bool, "False: no open session has that id (it had ended, or was closing)"]


class PingRequest(TypedDict):
    """client → front door, before every hello: is a pool there? No token; answered at
    once (a hello may wait for a worker); its handshake tells a refused CURVE key."""
    t: Annotated[Literal["ping"], "the message type"]


class PingReply(TypedDict):
    """front door → client."""
    ok: Annotated[Literal[True], "the request succeeded"]
    v: Annotated[int, "the pool's protocol version"]


class ErrorReply(TypedDict):
    """front door → client: the answer to any request that failed (the pool keeps serving).
    A throttled sign-in's refusal is held by the pool until its wait is over."""
    ok: Annotated[Literal[False], "the request failed"]
    error: Annotated[list[str], "[class name, text]: a class of errors.ERROR_CLASSES, which the client raises"]
    retry_after: NotRequired[Annotated[float, "SignInThrottledError only: ask again after this many seconds (0.0 when the pool held the reply)"]]


class WhereRequest(TypedDict):
    """client → front door, when the link to its worker ended or its heartbeat said the
    session moved (kernelproxy/relink.py): where is the session's worker now? Answered once
    a move under way is done."""
    t: Annotated[Literal["where"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class WhereReply(TypedDict):
    """front door → client: the session's worker (as in a hello's reply), how often the
    session has moved, and the last batch its previous worker ran (later ones are sent
    again to this worker)."""
    ok: Annotated[Literal[True], "the request succeeded"]
    worker_port: Annotated[int, "the worker's tcp port"]
    worker_host: NotRequired[Annotated[str, "the worker's host, in a pool across hosts"]]
    worker_ipc: Annotated[str | None, "the worker's Unix socket (unix://…), or None"]
    device: Annotated[DeviceInfo, "the worker's device"]
    runtime: Annotated[RuntimeFacts, "the device's CUDA facts"]
    moves: Annotated[int, "how often the session has moved (the same as the client's: it did not)"]
    ran: Annotated[int, "the last batch the session's previous worker ran (0: none, or it never moved)"]
    refused: Annotated[str | None, "why the last move asked of it did not happen, or None"]
