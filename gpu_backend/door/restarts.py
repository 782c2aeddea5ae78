"""A pool restart that keeps its sessions (issue 52): stopped with SIGTERM (or
``gpuwb-backend restart``), the pool parks every session in its swap directory before its
workers end; the pool that starts next on the same swap directory takes them back, and each
returning client finds its session, its arrays and its held stretches as they were.

Only ``gpuwb-backend serve`` stopped by SIGTERM or ``restart`` parks (an embedded pool's
``stop()`` and ^C end the sessions, as before: nothing is left on disk for a pool that may
never start again on that directory).

Stopping (:func:`park_all`): every session's worker is asked to park (worker/handover.py),
as for a move; the door's loop goes on reading their answers for up to ``PARK_WAIT``; then
one record per parked session (its id, key, user, grant, label, the manifest, the last
batch its worker ran) goes to ``restart/sessions.msgpack`` in the swap directory, created
0600 in a 0700 directory, like the arrays' files beside it. A session whose worker could
not park (a remote object, a full disk, no answer) ends as before, with "the pool stopped".

Starting (:func:`restore`): each record becomes a session again, parked until a spare of
its device (the same name, where the pool still has it; else the least-loaded device) adopts
it (door/moves.py), as a moved session is. Across hosts (a swap directory every host
mounts): the stopping door reads its agents' socket while their workers park, and the next
pool, whose hosts have not joined when it starts (and may be named otherwise), keeps each
session parked until its client asks, then places it on a device of any host. Its client, whose link ended with the old pool,
asks the new door where its worker is (``where``: the request waits in ZeroMQ's queue until
the new pool listens) and resends what the old worker never ran (kernelproxy/relink.py).
Clients that do not come back within the lease's timeout lose their session and its files,
as any session whose heartbeat stops. Only the pool's swap directory (``--swap-dir``), which
outlives a pool, keeps sessions: without it a restart ends them, as before. SIGKILL gives
the pool no time to park: its sessions are lost.

What a restarted session does not keep: its usage counts start again at zero in the new
pool (the usage log has both pools' lines), and its user's quota is checked afresh (a user
removed from the users file meanwhile loses the session).
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import msgpack
import zmq

from .moves import Move
from .placement import least_loaded
from gpu_backend.devices.swap_file_io import write_private
from gpu_backend.worker.handover import discard, files_of

__all__ = ["park_all", "restore", "keeps_sessions", "sweep_orphans", "ParkedWorker",
           "PARK_WAIT", "RECORDS"]

log = logging.getLogger("gpu_backend.door.restarts")

#: how long a stopping pool waits for its workers to park their sessions
PARK_WAIT = 30.0
#: the records' file in the swap directory's ``restart`` folder
RECORDS = "sessions.msgpack"


class ParkedWorker:
    """Stands for the worker of a session parked by the last pool, until a spare of *device*
    adopts it: it serves nothing, is told nothing, and ending it ends nothing."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.wid = "parked"
        self.session = None
        self.lease_id = ""
        self.port = None
        self.ipc = None
        self.info: dict = {}
        self.runtime: dict = {}

    def tell(self, msg: dict) -> bool:
        return False

    def end(self) -> None:
        return None


def _folder(door: Any) -> Path | None:
    swap_dir = door.settings.swap_dir
    return Path(swap_dir) / "restart" if swap_dir is not None else None


def park_all(door: Any) -> int:
    """Park every open session for the next pool and write their records; how many were."""
    folder = _folder(door)
    if folder is None or not door.sessions or not keeps_sessions(door):
        return 0
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for session in list(door.sessions.values()):
        if session.moving is None and not session.closing:
            door.moves.park_here(session, str(folder))
    # (their channels alone, and the agents' socket across hosts: the door's poller would
    # wake at every client's request, which nobody reads while the pool stops)
    poller = zmq.Poller()
    for session in door.sessions.values():
        channel = getattr(session.worker, "channel", None)
        if session.moving is not None and session.moving.stage == "parking" and channel is not None:
            poller.register(channel.fileno(), zmq.POLLIN)
    cluster = door.cluster
    if cluster is not None:
        poller.register(cluster.agents.sock, zmq.POLLIN)
    deadline = time.monotonic() + PARK_WAIT
    while time.monotonic() < deadline and any(
            s.moving is not None and s.moving.stage == "parking" for s in door.sessions.values()):
        events = dict(poller.poll(100))
        for fd in events:
            worker = door.host.worker_at(fd) if door.host is not None and type(fd) is int else None
            if worker is not None:
                door.on_control(worker)
        if cluster is not None:
            cluster.on_events(events)
    records = []
    for session in door.sessions.values():
        move = session.moving
        if move is None or move.stage != "parked":
            continue
        records.append({"session": session.sid, "key": session.key, "user": session.user,
                        "client": session.client, "label": session.label,
                        "memory_limit": session.memory_limit, "grant": session.grant,
                        "device": move.device or session.worker.device,
                        "manifest": move.manifest, "ran": session.ran, "moves": session.moves})
    if not records:
        return 0
    path = folder / RECORDS
    path.unlink(missing_ok=True)
    write_private(path, msgpack.packb({"v": 1, "sessions": records}, use_bin_type=True))
    for record in records:   # (kept for the next pool: not ended, their files stay)
        session = door.sessions.pop(record["session"])
        door.usage.close_session(session.sid, "the pool restarted: parked for the next",
                                 session.usage)
        session.moving = None
    log.warning("parked %d sessions in %s for the next pool", len(records), folder)
    return len(records)


def _ours(folder: Path) -> bool:
    """Whether *folder* is this user's own and private (its records are trusted)."""
    try:
        info = folder.stat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and (info.st_mode & 0o077) == 0


def _inside(path: Any, folder: Path) -> bool:
    """Whether a manifest's *path* lies in the swap directory (*folder*'s parent)."""
    try:
        return isinstance(path, str) and Path(path).resolve().is_relative_to(folder.parent.resolve())
    except (OSError, ValueError):
        return False


def _valid(record: Any) -> bool:
    return (isinstance(record, dict) and all(isinstance(record.get(k), str) for k in
                                             ("session", "user", "device", "manifest"))
            and isinstance(record.get("key"), bytes) and type(record.get("memory_limit")) is int)


def restore(door: Any, session_class: Any) -> int:
    """Take back the sessions the last pool parked in this swap directory; how many."""
    folder = _folder(door)
    path = folder / RECORDS if folder is not None else None
    if path is None or not path.exists():
        return 0
    if not _ours(folder):
        log.error("%s is not this user's private folder: its parked sessions are not restored",
                  folder)
        return 0
    try:
        raw = msgpack.unpackb(path.read_bytes(), raw=False)
        records = raw.get("sessions") if isinstance(raw, dict) and raw.get("v") == 1 else None
    except (OSError, ValueError, msgpack.UnpackException) as exc:
        log.error("the last pool's parked sessions cannot be read (%s): not restored", exc)
        records = None
    path.unlink(missing_ok=True)
    taken = 0
    for record in records or ():
        if not _valid(record) or not _inside(record["manifest"], folder) \
                or door.accounts.registry.get(record["user"]) is None:
            log.warning("a parked session of the last pool was not restored (its user is gone, "
                        "or its record is malformed)")
            if isinstance(record, dict) and _inside(record.get("manifest"), folder):
                discard(record["manifest"])
            continue
        # (its host not joined yet, across hosts: parked until its client asks, then on a
        # device of any host, all of which read the swap directory: moves.called_back)
        waits = record["device"] not in door.devices and not door.devices
        device = record["device"] if record["device"] in door.devices or waits else least_loaded(
            door.devices, door.sessions.values(), door.pending, 1 << 30)
        grant = record.get("grant") if type(record.get("grant")) is int else None
        session = session_class(record["session"], record["key"], record["user"],
                                ParkedWorker(device), record["memory_limit"],
                                client=str(record.get("client") or ""), grant=grant,
                                label=str(record.get("label") or ""))
        session.ran = record["ran"] if type(record.get("ran")) is int else 0
        session.moves = record["moves"] if type(record.get("moves")) is int else 0
        session.moving = Move(None if waits else device, "the pool restarted", stage="parked",
                              manifest=record["manifest"])
        door.sessions[session.sid] = session
        door.moves.moving[session.sid] = session
        door.usage.open_session(session.sid, session.user, device, session.client)
        taken += 1
    if taken:
        log.warning("took back %d sessions the last pool parked", taken)
    return taken


#: a swap file's name (worker/swap.py: ``swap-SESSION-PID``, or ``swap-PID`` before a
#: session) and a parked session's beside it (worker/handover.py), the worker's pid captured
_SWAP_NAME = re.compile(r"swap-(?:[0-9a-f]+-)?(\d+)(?:-park(?:-host|\.manifest)?|-lent-\d+)?")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # (another user's process: alive)
        return True
    return True


def sweep_orphans(door: Any) -> int:
    """At start: the swap files a killed pool's workers left in this pool's own
    ``--swap-dir`` (SIGKILL gives them no time to delete them; a session's arrays, which
    must not outlive it), deleted: each whose worker's process has gone and which no
    session taken back from the last pool names. Not where the directory is shared
    between hosts (another host's pids mean nothing here) or not this user's own. How many."""
    swap_dir = door.settings.swap_dir
    if swap_dir is None or door.host is None or door.settings.swap_dir_shared:
        return 0
    folder = Path(swap_dir)
    if not folder.is_dir() or not _ours(folder):
        return 0
    kept: set[str] = set()
    for session in door.moves.moving.values():   # (the sessions restored: parked in files)
        if session.moving.manifest:
            kept |= files_of(session.moving.manifest)
    removed = 0
    restart = folder / "restart"   # (and what a park left there after its pool gave up
    paths = [*folder.iterdir(), *(restart.iterdir() if restart.is_dir() else ())]   # on it)
    for path in paths:
        found = _SWAP_NAME.fullmatch(path.name)
        if found is None or str(path) in kept or not path.is_file() or _alive(int(found[1])):
            continue
        path.unlink(missing_ok=True)
        removed += 1
    if removed:
        log.warning("removed %d swap files that workers of a killed pool left in %s",
                    removed, folder)
    return removed


def keeps_sessions(door: Any) -> bool:
    """Whether a stop can park the sessions: a swap directory (across hosts, one every host
    mounts: the next pool's hosts may be named otherwise), and a fixed port (a pool on a
    port the system chose comes back on another: no client would find it)."""
    return (_folder(door) is not None and door.settings.port != 0
            and (door.host is not None or door.settings.swap_dir_shared))

