"""Where a new session goes: the least-loaded device of the pool, apart from the devices a
client's other sessions hold.

The front door asks at every hello (gpu_backend/door/frontdoor.py). Load is counted in
sessions (open and waiting for a worker; not those their client has closed, whose worker
is finishing), then in the memory they use: the device with
the fewest sessions wins; among equals, the one on the host with the fewest sessions (a
pool across hosts: its sessions share their host's cores and links, and a host lost takes
fewer of them; the devices' order, which is the order their hosts joined, decided before,
and two sessions of a pool of hosts alpha and beta both went to beta where beta joined
first), then the one with the least memory in use. A device
already holding ``max_sessions_per_device`` is full. A client that holds several devices
opens one session per device, each naming the others in ``apart_from``
(docs/architecture.md, "A session on several GPUs").
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from gpu_backend.multihost.remote_host import host_of_device_name
from gpu_backend.protocol.errors import ProtocolError, SessionLostError

__all__ = ["devices_apart_from", "devices_kept_apart", "least_loaded", "device_loads"]


def device_loads(sessions: Iterable[Any], pending: Iterable[Any] = ()) -> Callable[[str], tuple[int, int]]:
    """Each device's load as placement counts it: its open *sessions* and *pending* hellos
    (or moves on their way there), then the memory the sessions use; a function of the
    device's name."""
    counts: dict[str, int] = {}
    memory: dict[str, int] = {}
    for s in sessions:   # (one pass: a pool across hosts has hundreds of devices)
        if not s.closing:
            device = s.worker.device
            counts[device] = counts.get(device, 0) + 1
            memory[device] = memory.get(device, 0) + (s.usage.get("memory") or 0)
    for p in pending:
        counts[p.device] = counts.get(p.device, 0) + 1
    return lambda device: (counts.get(device, 0), memory.get(device, 0))


def devices_apart_from(sessions: Mapping[str, Any], devices: list[str], user: str,
                       named: Any) -> set[str]:
    """The devices of *user*'s own open *sessions* named in a hello's ``apart_from``
    (*named*: untrusted, from the client)."""
    if named is None:
        return set()
    if type(named) is not list or not all(type(s) is str for s in named) \
            or len(named) > len(devices):
        raise ProtocolError("a hello's apart_from is a list of the client's session ids")
    taken = set()
    for sid in named:
        session = sessions.get(sid)
        if session is None or session.user != user or session.closing:
            raise ProtocolError(f"apart_from names {sid!r}, not an open session of yours")
        taken.add(session.worker.device)
    return taken


def devices_kept_apart(sessions: Iterable[Any], session: Any) -> set[str]:
    """The devices *session* must not move to: those of the open sessions its hello named
    in ``apart_from``, and of those whose hellos named it (one client's sessions on several
    devices stay on several devices)."""
    return {s.worker.device for s in sessions
            if s is not session and not s.closing
            and (s.sid in session.apart or session.sid in s.apart)}


def least_loaded(devices: list[str], sessions: Iterable[Any], pending: Iterable[Any],
                 most_per_device: int, taken: set[str] = frozenset()) -> str:
    """The device for a new session: of *devices* not *taken* and not full, the one with
    the fewest *sessions* and *pending* hellos, then on the host with the fewest, then with
    the least memory in use."""
    load = device_loads(sessions, pending)

    candidates = [d for d in devices if d not in taken]
    if not devices:
        raise SessionLostError("the pool has no device yet: no GPU host has joined it")
    if not candidates:
        raise SessionLostError(
            f"the pool has {len(devices)} device{'s' * (len(devices) != 1)}: "
            f"a session cannot hold {len(taken) + 1}")
    open_devices = [d for d in candidates if load(d)[0] < most_per_device]
    if not open_devices:
        raise SessionLostError("every device of the pool is full; try again later"
                               if not taken else
                               "every other device of the pool is full; try again later")
    hosts: dict[str, int] = {}
    for device in devices:
        host = host_of_device_name(device)
        hosts[host] = hosts.get(host, 0) + load(device)[0]

    def key(device: str) -> tuple[int, int, int]:
        sessions, memory = load(device)
        return sessions, hosts[host_of_device_name(device)], memory
    return min(open_devices, key=key)
