"""A worker ↔ the front door, over the socket pair the worker inherits: ready, usage, grants
and quotas, swaps, and a session's moves (park, lend, adopt). One ``TypedDict`` per message;
the package's docstring (``__init__``) says how they are read and rendered, and every name
is taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Literal, NotRequired, TypedDict

from .device_facts import DeviceInfo, RuntimeFacts

__all__ = ["ControlReady", "ControlUsage", "ControlEnded", "ControlGrow", "ControlGrant",
           "ControlAssign", "QuotaRefusal", "ControlGranted", "ControlStop", "ControlSwap",
           "ControlSwapped", "ControlSwapDue", "ControlRoom", "ControlRoomed", "ControlReclaim",
           "ControlPark", "ControlUnpark", "ControlElsewhere", "ControlStay", "ControlRelease",
           "ControlParked", "ControlAdopted"]


class ControlReady(TypedDict):
    """worker → front door, once warm (device open, sockets bound): it may be assigned a
    session."""
    t: Annotated[Literal["ready"], "the message type"]
    port: Annotated[int, "its ROUTER's tcp port"]
    ipc: Annotated[str | None, "its Unix socket (unix://…) for same-host clients, or None"]
    info: Annotated[DeviceInfo, "its device"]
    runtime: Annotated[RuntimeFacts, "its device's CUDA facts"]
    lease: Annotated[str, "its identity at the arbiter: a random secret, never on a command line"]
    host_memory: NotRequired[Annotated[int, "bytes of memory its host has (its cgroup's limit where lower): the pool's default host budget for swapped sessions is a quarter of it"]]


class ControlUsage(TypedDict):
    """worker → front door, at most every 0.5 s while serving, when a figure changed: the
    session's cumulative usage (the accounting: docs/fair-share.md)."""
    t: Annotated[Literal["usage"], "the message type"]
    memory: Annotated[int, "bytes the session's arrays hold now"]
    arrays: Annotated[int, "arrays the session holds"]
    device_s: Annotated[float, "device seconds measured"]
    ops: Annotated[int, "ops run"]
    bytes_in: Annotated[int, "bytes uploaded"]
    bytes_out: Annotated[int, "bytes downloaded"]
    errors: Annotated[int, "ops that failed"]
    oom: Annotated[int, "of them, ops that ran out of device memory (OutOfMemoryError)"]
    peak: Annotated[int, "the most bytes the session has held"]
    swapped: Annotated[int, "bytes of its arrays swapped out now (worker/swap.py; 0: none)"]
    swapped_host: Annotated[int, "of the bytes swapped out now, those in host memory (the rest are in its swap file)"]
    swapped_arrays: Annotated[int, "of its arrays, how many are swapped out now"]
    swaps_out: Annotated[int, "times it was swapped out"]
    swaps_in: Annotated[int, "times its arrays came back"]
    swap_bytes: Annotated[int, "bytes it has written to swap in all"]
    swap_seconds: Annotated[float, "how long its last swap, out or in, took"]
    waited_s: Annotated[float, "wall seconds its batches waited for the device while other sessions held it"]
    worked_s: Annotated[float, "wall seconds its batches took in the worker, waits included"]
    idle: NotRequired[Annotated[float, "seconds since its last batch, by the worker's clock when it sent this (the pool's idle time and swap choices follow it)"]]


class ControlEnded(TypedDict):
    """worker → front door, as it exits (unless the pool has gone): why, and its last
    figures (those of :class:`ControlUsage` but ``t``; fewer after a device fault)."""
    t: Annotated[Literal["ended"], "the message type"]
    reason: Annotated[str, "why the worker ends (\"closed by the client\", \"stopped by the pool\", a device fault, …)"]
    memory: Annotated[int, "bytes still held before its arrays were freed (0 after a device fault)"]
    arrays: Annotated[int, "arrays the session held"]
    ops: Annotated[int, "ops run"]
    device_s: NotRequired[Annotated[float, "device seconds measured"]]
    bytes_in: NotRequired[Annotated[int, "bytes uploaded"]]
    bytes_out: NotRequired[Annotated[int, "bytes downloaded"]]
    errors: NotRequired[Annotated[int, "ops that failed"]]
    oom: NotRequired[Annotated[int, "of them, ops that ran out of device memory"]]
    peak: NotRequired[Annotated[int, "the most bytes the session held"]]
    waited_s: NotRequired[Annotated[float, "wall seconds its batches waited for the device while other sessions held it"]]
    worked_s: NotRequired[Annotated[float, "wall seconds its batches took in the worker, waits included"]]


class ControlGrow(TypedDict):
    """worker → front door, under a user's memory quota, when an allocation would pass the
    grant: answered with :class:`ControlGranted` (within 10 s, or the allocation fails)."""
    t: Annotated[Literal["grow"], "the message type"]
    want: Annotated[int, "bytes the session needs in all"]


class ControlGrant(TypedDict):
    """worker → front door: memory handed back to the user's quota (idle, or asked by
    :class:`ControlReclaim`, which it always answers so)."""
    t: Annotated[Literal["grant"], "the message type"]
    bytes: Annotated[int | None, "the session's grant now, bytes (None: it has no quota)"]


class ControlAssign(TypedDict):
    """front door → a warm worker: serve this session (before the client's hello is
    answered)."""
    t: Annotated[Literal["assign"], "the message type"]
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user (names diagnostics)"]
    key: Annotated[bytes, "the session key every client message must carry"]
    memory_limit: Annotated[int, "the session's memory limit, bytes"]
    grant: Annotated[int | None, "memory granted under the user's quota, bytes (None: no quota)"]
    grant_step: Annotated[int | None, "bytes asked for (and handed back) at a time under the quota"]
    quota: Annotated[int | None, "the user's memory quota, bytes (None: none)"]
    swap_idle: NotRequired[Annotated[float | None, "seconds idle after which its arrays are swapped out (None: never by itself)"]]
    swap_dir: NotRequired[Annotated[str | None, "the pool's swap directory (0700) for its swap file (None: no swapping)"]]
    device_memory: NotRequired[Annotated[int | None, "the NumPy device's memory shared by its sessions, bytes (None: each has only its own limit; GPU workers ignore it)"]]
    device_turns: NotRequired[Annotated[bool, "the NumPy device's sessions run their ops in turns, as one GPU's do (devices/host_turns.py; GPU workers ignore it)"]]
    adopt: NotRequired[Annotated[str | bytes, "a session moved here: the manifest its last worker parked or lent it in, or its bytes (answered with ControlAdopted)"]]
    adopt_from: NotRequired[Annotated[str, "where its last worker, on another host, streams its arrays from (tcp://host:port)"]]


class QuotaRefusal(TypedDict):
    """A :class:`ControlGranted`'s ``why``: the quota the request met."""
    user: Annotated[str, "the user"]
    quota: Annotated[int, "their memory quota, bytes"]
    others: Annotated[int, "bytes their other sessions hold"]
    sessions: Annotated[int, "how many other sessions they have"]


class ControlGranted(TypedDict):
    """front door → worker: the answer to :class:`ControlGrow` (perhaps after reclaiming
    memory from the user's other sessions)."""
    t: Annotated[Literal["granted"], "the message type"]
    bytes: Annotated[int, "the session's grant now, bytes"]
    why: Annotated[QuotaRefusal | None, "why it is short of want (the OutOfMemoryError's text names it), or None"]


class ControlStop(TypedDict):
    """front door → worker: end (the client closed the session, or the pool stops); the
    worker answers with :class:`ControlEnded` and exits."""
    t: Annotated[Literal["stop"], "the message type"]


class ControlSwap(TypedDict):
    """front door → worker: swap the session's arrays out now (their device memory is
    wanted, or an administrator asked); answered with :class:`ControlSwapped`."""
    t: Annotated[Literal["swap"], "the message type"]
    host: NotRequired[Annotated[int, "bytes of them it may keep in its host's memory (the door's share of the host budget); the rest go to its swap file (absent: all to the file)"]]
    idle: NotRequired[Annotated[float, "asked for another session's memory: the idle seconds its reports showed; a worker whose last batch is more recent stays (ControlSwapped's busy)"]]


class ControlSwapped(TypedDict):
    """worker → front door: the session's arrays went to host memory or its swap file (idle, or asked by
    :class:`ControlSwap`), or could not (``error``: they all stay on the device)."""
    t: Annotated[Literal["swapped"], "the message type"]
    bytes: Annotated[int, "bytes swapped out (0: nothing to swap, or an error)"]
    host: NotRequired[Annotated[int, "of them, bytes in host memory (the rest went to its swap file)"]]
    seconds: Annotated[float, "how long the swap-out took"]
    error: NotRequired[Annotated[str, "why it could not (absent when it did)"]]
    busy: NotRequired[Annotated[float, "asked out as idle (ControlSwap's idle), it stayed: the seconds since its last batch"]]


class ControlSwapDue(TypedDict):
    """worker → front door: its session has been idle for the pool's ``swap_idle``; the door
    answers with :class:`ControlSwap` if its user's swap cap has room (once an idle spell)."""
    t: Annotated[Literal["swap_due"], "the message type"]
    bytes: Annotated[int, "bytes its arrays hold on the device"]


class ControlRoom(TypedDict):
    """worker → front door: an allocation found the device's memory full (not the session's
    quota or limit): swap idle sessions of the device out; answered with
    :class:`ControlRoomed` (within 60 s, or the allocation fails)."""
    t: Annotated[Literal["room"], "the message type"]
    want: Annotated[int, "bytes short (0: unknown)"]


class ControlRoomed(TypedDict):
    """front door → worker: the answer to :class:`ControlRoom`, once the sessions asked to
    swap out have (or their wait is over)."""
    t: Annotated[Literal["roomed"], "the message type"]
    freed: Annotated[int, "bytes the sessions swapped out held (0: none could go)"]


class ControlReclaim(TypedDict):
    """front door → worker: another session of the user wants memory: hand back what is
    not in use (answered with :class:`ControlGrant`)."""
    t: Annotated[Literal["reclaim"], "the message type"]


class ControlPark(TypedDict):
    """front door → worker: park the session for another worker (a move, a drain): at its
    loop, between batches, write the arrays, held stretches and last batch to a directory
    and exit; answered with :class:`ControlParked`."""
    t: Annotated[Literal["park"], "the message type"]
    dir: Annotated[str | None, "the directory to park in (None: the session's swap directory)"]
    lend: NotRequired[Annotated[bool, "lend the arrays where the device can (CUDA IPC within the host; streamed with ``stream``) and wait for ControlRelease, instead of writing them out"]]
    stream: NotRequired[Annotated[bool, "the adopter is on another host: stream the arrays to it from a port of this host"]]
    files: NotRequired[Annotated[bool, "whether they may go through the swap directory instead (False: the other host does not mount it)"]]


class ControlUnpark(TypedDict):
    """front door → worker: the move asked by :class:`ControlPark` is given up (its worker
    did not park in time, busy with a long batch; a lent session's adopter failed): the
    session stays."""
    t: Annotated[Literal["unpark"], "the message type"]


class ControlElsewhere(TypedDict):
    """worker → front door: the session's arrays do not fit its device, full of sessions
    that cannot be swapped out (its swap-in asked for room and got none): move it to a
    device with room, answered with ``park`` (its waiting batch is then left unanswered:
    the client sends it again to the next worker) or :class:`ControlStay`."""
    t: Annotated[Literal["elsewhere"], "the message type"]
    want: Annotated[int, "bytes of its arrays"]


class ControlStay(TypedDict):
    """front door → worker: no device has room for the session (:class:`ControlElsewhere`):
    it stays, and its batch fails with the device's out-of-memory error."""
    t: Annotated[Literal["stay"], "the message type"]


class ControlRelease(TypedDict):
    """front door → a worker that lent its session (:class:`ControlParked` ``lent``): the
    adopter has copied the arrays; free them and exit."""
    t: Annotated[Literal["release"], "the message type"]


class ControlParked(TypedDict):
    """worker → front door: the session is parked (the worker then exits), or could not be
    (``error``: it stays, nothing lost)."""
    t: Annotated[Literal["parked"], "the message type"]
    manifest: NotRequired[Annotated[str | bytes, "the parked session's manifest (0600, msgpack), for the adopting worker; its bytes where it streams the arrays"]]
    bytes: NotRequired[Annotated[int, "bytes of arrays parked"]]
    batch: NotRequired[Annotated[int, "the last batch it ran"]]
    lent: NotRequired[Annotated[bool, "the arrays stayed in this worker's device memory, lent (it waits for ControlRelease or ControlUnpark)"]]
    port: NotRequired[Annotated[int, "the port of this host it streams them from (a move to another host)"]]
    error: NotRequired[Annotated[str, "why it could not park (a remote object it holds, a full disk)"]]


class ControlAdopted(TypedDict):
    """worker → front door, after an :class:`~messages.ControlAssign` with ``adopt``: it has
    the moved session (its arrays come back at its first batch), or could not take it."""
    t: Annotated[Literal["adopted"], "the message type"]
    bytes: NotRequired[Annotated[int, "bytes of arrays adopted"]]
    error: NotRequired[Annotated[str, "why not (the session then ends, saying so)"]]
