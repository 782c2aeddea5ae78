"""The rows and parts of a ``StatusReply`` (also ``LocalPool.door.status()``, the metrics and
the Jupyter server extension's JSON). One ``TypedDict`` per message; the package's docstring
(``__init__``) says how they are read and rendered, and every name is taken from the
package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, NotRequired, TypedDict

from .device_facts import DeviceInfo

__all__ = ["StatusDevice", "StatusUser", "StatusAccount", "StatusSession", "EndedSession",
           "StatusHost", "StatusSpin", "ShareHistory", "DeviceSamples"]


class StatusDevice(TypedDict):
    """A row of a :class:`StatusReply`'s ``devices``."""
    device: Annotated[str, "the device as the pool names it: \"cuda:0\", \"cpu:0\"; across hosts \"HOST/cuda:0\""]
    host: Annotated[str | None, "the host it is on, in a pool across hosts (None: the pool's own)"]
    info: Annotated[DeviceInfo, "as one of its workers reported it ({} before any was ready)"]
    sessions: Annotated[int, "its open sessions"]
    memory_used: Annotated[int, "bytes its sessions use (their last usage reports)"]
    spares_ready: Annotated[int, "warm workers waiting for a session"]


class StatusUser(TypedDict):
    """A row of a :class:`StatusReply`'s ``users``: one user on one device."""
    user: Annotated[str, "the user's name"]
    device: Annotated[str, "the device"]
    weight: Annotated[float, "the user's weight"]
    target_share: Annotated[float, "weight over the weights of the users with work there (0 to 1)"]
    share: Annotated[float, "the user's share of the device time used there in the last 10 s (0 to 1)"]
    waited: Annotated[float | None, "of the wall time the user's batches spent in their workers there in the last 10 s, the part they waited for the device while other users held it (0 to 1; None: no batch then)"]
    sessions: Annotated[int, "the user's sessions there"]
    waiting: Annotated[int, "the user's sessions there waiting for the device (the arbiter's)"]
    holding: Annotated[bool, "whether a session of the user holds the device"]
    memory_used: Annotated[int, "bytes the user's sessions there use"]
    memory_quota: Annotated[int | None, "the user's memory quota over all devices, bytes (None: none)"]
    memory_granted: Annotated[int | None, "bytes granted to the user's sessions there under that quota (None: no quota)"]


class StatusAccount(TypedDict):
    """A row of a :class:`StatusReply`'s ``accounts``: one user of the pool, with or without
    sessions (the users file's users; ``default`` in single-token mode)."""
    user: Annotated[str, "the user's name"]
    weight: Annotated[float, "the user's weight"]
    memory_quota: Annotated[int | None, "the user's memory quota over all devices, bytes (None: none)"]
    sessions_quota: Annotated[int | None, "how many sessions the user may have at once (None: no limit)"]
    sessions: Annotated[int, "the user's open sessions, all devices"]
    memory_used: Annotated[int, "bytes the user's sessions use, all devices"]
    oom_ago: Annotated[float | None, "seconds since an op of one of the user's open sessions ran out of device memory (None: none did)"]


class StatusSession(TypedDict):
    """A row of a :class:`StatusReply`'s ``sessions``."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    client: Annotated[str, "the hello's user label (user@host)"]
    label: Annotated[str, "what opened it: the hello's label (a notebook's path, a script's name); \"\" in the status of another user"]
    device: Annotated[str, "its device"]
    memory_used: Annotated[int, "bytes it uses (its last usage report)"]
    memory_limit: Annotated[int, "its memory limit, bytes"]
    memory_granted: Annotated[int | None, "bytes granted under its user's quota (None: no quota)"]
    arrays: Annotated[int, "arrays it holds"]
    ops: Annotated[int, "ops its worker has run"]
    device_seconds: Annotated[float, "device seconds its worker measured"]
    idle: Annotated[float, "seconds since its worker last ran an op (since it opened, if none has run)"]
    heartbeat: Annotated[float, "seconds since its client's last heartbeat"]
    oom_ago: Annotated[float | None, "seconds since one of its ops ran out of device memory (None: none did)"]
    age: Annotated[float, "seconds since it opened"]
    swapped: Annotated[int, "bytes of its arrays swapped out, to its host's memory or the pool's swap directory (0: none; they come back at its next op)"]
    swapped_host: NotRequired[Annotated[int, "of them, bytes in its host's memory (the rest are in its swap file)"]]
    swaps: Annotated[int, "times it was swapped out"]
    parked: NotRequired[Annotated[bool, "its worker has exited (idle and swapped out, or moving): its arrays wait in the swap directory for its next op"]]
    swap_seconds: Annotated[float, "how long its last swap, out or in, took"]


class EndedSession(TypedDict):
    """A row of a :class:`StatusReply`'s ``ended``."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "its device"]
    ops: Annotated[int, "ops its worker ran"]
    memory_used: Annotated[int, "bytes it used at its last report"]
    age: Annotated[float, "seconds it was open"]
    reason: Annotated[str, "why it ended (\"lease expired\", \"closed by the client\", a device fault, …)"]


class StatusHost(TypedDict):
    """A row of a :class:`StatusReply`'s ``hosts``: one GPU host of a pool across hosts."""
    host: Annotated[str, "its name in the pool (its devices are HOST/…)"]
    address: Annotated[str, "where clients reach its workers"]
    devices: Annotated[list[str], "its devices, as the pool names them"]
    workers: Annotated[int, "worker processes its agent keeps"]
    sessions: Annotated[int, "open sessions on it"]
    joined: Annotated[float, "seconds since it joined"]
    heard: Annotated[float, "seconds since its agent last reported"]


class StatusSpin(TypedDict):
    """A :class:`StatusReply`'s ``spin``: how many workers may keep polling after a message,
    and for how long."""
    slots: Annotated[int, "the pool's spin slots (0: none)"]
    window_ms: Annotated[float, "how long a worker holding a slot polls after each message, ms"]


class ShareHistory(TypedDict):
    """A :class:`StatusReply`'s ``history`` entry for one device (``UsageLog.history``)."""
    t0: Annotated[float, "the first second's start (Unix time)"]
    step: Annotated[float, "seconds per entry (1.0)"]
    users: Annotated[dict[str, list[float]], "per user, device seconds used in each step"]
    devices: Annotated[dict[str, dict[str, list[float]]], "the same per device (here: this one device)"]
    waited: Annotated[dict[str, list[float]], "per user, wall seconds its batches waited for the device while others held it, in each step (the users' side)"]
    worked: Annotated[dict[str, list[float]], "per user, wall seconds its batches took in their workers, waits included, in each step"]


class DeviceSamples(TypedDict):
    """A :class:`StatusReply`'s ``device_history`` entry for one device
    (``device_samples.DeviceSampler``): the pool samples each device every ``step`` seconds
    and keeps the last 10 minutes. A list's None: no figure at that sample."""
    t0: Annotated[float, "the first sample's time (Unix time)"]
    step: Annotated[float, "seconds between samples"]
    busy: Annotated[list[float | None], "the part of each step the device ran sessions' work, by the pool's accounting (device time its workers measured; 0 to 1)"]
    memory: Annotated[list[int | None], "bytes the device's sessions held (their usage reports)"]
    utilization: Annotated[list[float | None] | None, "NVML's GPU utilisation at each sample (0 to 1); None where NVML is not read"]
    nvml_memory: Annotated[list[int | None] | None, "device memory in use as NVML reports it (every process's), bytes; None where NVML is not read"]
    memory_total: Annotated[int | None, "the device's memory, bytes (None on the host)"]
    nvml: Annotated[str, "\"ok\" while NVML is read, else why not (not a GPU, nvidia-ml-py not installed, no driver)"]
