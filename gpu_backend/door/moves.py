"""Sessions moved from one worker to another without losing an array (issue 52): to another
device of the host when an administrator drains one (``gpuwb-backend drain``), and the
hand-over a pool's restart is made of (door/restarts.py).

A move has three steps, each an answer to the last:

1. the door tells the session's worker to **park** (``park``): at its serving loop,
   between batches, it writes the session's arrays, held stretches and the number of the
   last batch it ran to the swap directory (worker/handover.py), answers ``parked``, and
   exits (a session that cannot move, holding a remote object, answers why and stays);
2. the door gives a ready spare of the target device the session (``assign`` with
   ``adopt``: the manifest's path): it takes the session over as a swapped one, its arrays
   back at its first batch;
3. the client, told by its next heartbeat (``moves``: how often its session has moved) or
   by its link's end, asks the door where its worker is now (``where``) and resends, on the
   new link, the batches the old worker did not run (kernelproxy/session.py).

The session keeps its id, key, user, grant and usage: the usage the old worker reported is
carried, so the new worker's counts add to it (:func:`carried_usage`).

Within one host the arrays need not go through the directory: the old worker is told to
*lend* them (``park`` with ``lend``). It answers ``parked`` with ``lent`` and waits, its
arrays in place (CUDA IPC on a GPU); the spare copies them straight into its device's
memory (worker/handover.py) and answers ``adopted``; only then is the old worker told to
``release`` them and end, and the client told the session moved. Until then the move can
be undone at no cost: an adopter that fails, or no spare within MOVE_WAIT, gives the
session back to the old worker (``unpark``), which serves on as if nothing had happened.
A move to the device a session is on already is allowed: it gets a fresh worker there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from gpu_backend.door.placement import device_loads, devices_kept_apart, least_loaded
from gpu_backend.protocol.errors import SessionLostError
from gpu_backend.worker.handover import discard

__all__ = ["Move", "Moves", "carried_usage", "MOVE_WAIT", "SPARE_WAIT", "RELEASE_WAIT", "CUMULATIVE"]

log = logging.getLogger("gpu_backend.door.moves")

#: how long a session's worker may take to park it before the move is given up
MOVE_WAIT = 120.0
#: how long a parked session may wait for a spare of its target device (counted from its
#: parking) before the move is given up
SPARE_WAIT = 120.0
#: how long a lent session's adopter may take to copy it before the move is undone (the
#: lender waits for word longer: worker/handover.py's LOAN_WAIT)
ADOPT_WAIT = 120.0
#: How long a lender told to release is counted as memory about to come free on its device
#: (``Moves.leaving``): it frees what it lent and ends at once, and a room request on its
#: device waits for it (swap_broker.py) within the swap's own SWAP_WAIT
RELEASE_WAIT = 30.0
#: the figures of a worker's usage report that only grow: a moved session's new worker
#: counts from zero, so the old worker's are added (peak: the larger)
CUMULATIVE = ("device_s", "ops", "bytes_in", "bytes_out", "waited_s", "worked_s",
              "swaps_out", "swaps_in", "swap_bytes")


@dataclass
class _Going:
    """A session on its way to *device*, counted there by placement (as a hello is)."""
    device: str


@dataclass
class Move:
    """A session on its way to *device*: ``parking`` (its worker asked), ``parked`` (waiting
    for a spare), ``adopting`` (a spare told). *waiting*: clients asking where it goes."""
    device: str | None   # (None: parked for the next pool, restarts.py)
    why: str
    stage: str = "parking"
    manifest: str | None = None
    since: float = field(default_factory=time.monotonic)
    waiting: list = field(default_factory=list)
    lender: Any = None   # (the old worker, where it lent the arrays and waits)
    stream: str | None = None   # (where the lender streams them from, to another host)
    held: int = 0   # (device bytes the session held where it was: the lender's, until it ends)


def carried_usage(session: Any, report: dict) -> dict:
    """*report*, a worker's cumulative usage, with what the session's earlier workers
    counted added (a moved session's); the report itself where it never moved."""
    carried = getattr(session, "carried", None)
    if not carried:
        return report
    out = dict(report)
    for name in CUMULATIVE:
        if type(out.get(name)) in (int, float) and type(carried.get(name)) in (int, float):
            out[name] = out[name] + carried[name]
    if type(carried.get("peak")) is int and type(out.get("peak")) is int:
        out["peak"] = max(out["peak"], carried["peak"])
    return out


class Moves:
    """The moves under way, driven by the front door's loop (*door*: its sessions, hosts,
    spares and replies)."""

    def __init__(self, door: Any) -> None:
        self.door = door
        self.moving: dict[str, Any] = {}   # session id -> session (session.moving: its Move)
        #: devices being drained: placement passes them by, their sessions move away
        self.draining: set[str] = set()
        self.moved = self.refused = 0
        self._next_look = 0.0
        #: lenders told to release, by worker id: (the worker, the device bytes it held,
        #: when it was told), until it ends or RELEASE_WAIT has passed (leaving)
        self._releasing: dict[str, tuple[Any, int, float]] = {}

    # ------------------------------------------------------------ starting
    def start(self, session: Any, device: str, why: str, directory: str | None = None) -> str | None:
        """Move *session* to *device*; None once started, else why not."""
        if getattr(session, "moving", None) is not None:
            return "it is already moving"
        if session.closing:
            return "it is closing"
        host = self.door.hosts.of(device)
        if host is None:
            return f"the pool has no device {device}"
        settings = self.door.settings
        same_host = host is self.door.hosts.of(session.worker.device)
        shared = settings.swap_dir is not None and settings.swap_dir_shared
        # (within the host: lent in place; to another: streamed from the old worker, and
        # through the swap directory only where every host mounts it)
        if not session.worker.tell({"t": "park", "dir": directory, "lend": True,
                                    "stream": not same_host, "files": same_host or shared}):
            return "its worker has ended"
        session.moving = Move(device, why, held=int(session.usage.get("memory") or 0))
        self.moving[session.sid] = session
        log.info("session %s moving from %s to %s (%s)", session.sid, session.worker.device,
                 device, why)
        return None

    def park_here(self, session: Any, directory: str | None, why: str = "the pool restarts") -> bool:
        """Park *session* in *directory* (None: its swap directory) until it is asked for: by
        the next pool (a restart, restarts.py), or by its client's next op (an idle session,
        :meth:`park_idle`). Whether its worker was told."""
        if not session.worker.tell({"t": "park", "dir": directory}):
            return False
        session.moving = Move(None, why)
        self.moving[session.sid] = session
        return True

    def park_idle(self, idle: float, now: float | None = None) -> None:
        """Park each session swapped out and idle for *idle* seconds: its worker exits,
        giving back its process and device context (~500 MiB of a GPU's memory); its next op
        brings a worker back (:meth:`called_back`). Looked at once a second."""
        now = time.monotonic() if now is None else now
        if now < self._next_look:
            return
        self._next_look = now + 1.0
        for session in list(self.door.sessions.values()):
            if (session.moving is None and not session.closing and session.usage.get("swapped")
                    and session.worker.session is session and now - session.last_work >= idle
                    and session.park_refused_at != session.last_work):
                self.park_here(session, None, f"idle for {idle:g} s, swapped out")

    def elsewhere(self, session: Any, want: Any) -> None:
        """*session*'s arrays do not fit its device, full of busy sessions: moved to the
        device of its host (of the pool, with a shared swap directory) with room for
        *want* bytes and the most of it, if there is one; else told to stay (its op then
        fails with the device's out-of-memory error, nothing lost)."""
        want = want if type(want) is int and want >= 0 else 0
        shared = self.door.settings.swap_dir_shared
        sessions = [s for s in self.door.sessions.values() if not s.closing]
        kept_apart = devices_kept_apart(sessions, session)
        rooms = {}
        for device in self.door.devices:
            if (device == session.worker.device or device in self.draining or device in kept_apart
                    or self.door.spares.resting(device) is not None
                    or not (shared or self.door.hosts.of(device)
                            is self.door.hosts.of(session.worker.device))):
                continue
            room = self._room_on(device, sessions)
            if room is not None and room >= want:
                rooms[device] = room
        if rooms and session.moving is None:
            target = max(rooms, key=rooms.get)
            if self.start(session, target, "its device is full") is None:
                return
        session.worker.tell({"t": "stay"})

    def _room_on(self, device: str, sessions: list) -> int | None:
        """Bytes of *device*'s memory its sessions do not hold (its workers' figure of its
        memory, a GPU's; the pool's --numpy-device-memory, a NumPy device's), None where
        unknown."""
        workers = [*self.door.hosts.spares(device),
                   *(s.worker for s in sessions if s.worker.device == device)]
        total = next((w.info.get("memory_total") for w in workers
                      if isinstance(getattr(w, "info", None), dict)
                      and type(w.info.get("memory_total")) is int), None)
        total = total or self.door.settings.numpy_device_memory
        if not total:
            return None
        held = sum(s.usage.get("memory") or 0 for s in sessions if s.worker.device == device)
        return int(total) - held

    def called_back(self, session: Any) -> None:
        """A session parked until asked for is asked for (its client's ``where``): a spare of
        the least-loaded device takes it back, its own where that is as little loaded (its
        arrays wait in files any device of the host reads: returning is where the pool
        rebalances, at no cost)."""
        move = session.moving
        if move is None or move.device is not None or move.stage != "parked":
            return
        if not self.door.devices:   # (a restarted pool's hosts not joined yet: asked again)
            return
        others = [s for s in self.door.sessions.values() if s is not session]
        shared = self.door.settings.swap_dir_shared   # (every host reads its files)
        devices = [d for d in self.door.devices if d not in self.draining
                   and self.door.spares.resting(d) is None   # (its workers fail to start)
                   and (shared or self.door.hosts.of(d) is self.door.hosts.of(session.worker.device))]
        going = [_Going(s.moving.device) for s in self.moving.values()   # (counted where
                 if s is not session and s.moving.device is not None]    # they go)
        device = session.worker.device
        try:
            best = least_loaded(devices, others, [*self.door.pending, *going],
                                self.door.settings.max_sessions_per_device,
                                devices_kept_apart(others, session))
        except SessionLostError:   # (every device full: its own, as a hello would wait for)
            best = device
        load = device_loads(others, going)
        if device not in devices or load(best) < load(device):
            device = best
        if self.door.hosts.of(device) is None:   # (no such device now, a restored session's
            return                               # old name: placed when it is asked again)
        move.device, move.since = device, time.monotonic()
        session.last_work = move.since   # (its client is back: not idle, not parked again)
        self.door.keep_spares_for(device)
        self.serve()

    def reported_moves(self, session: Any) -> int:
        """The move count a heartbeat tells: one more while the session is parked until
        asked for, so that a client whose link cannot tell it (tcp) asks where it is."""
        move = session.moving
        return session.moves + (1 if move is not None and move.device is None
                                and move.stage == "parked" and session.worker.session is None
                                and self.door.sessions.get(session.sid) is session else 0)

    def drain(self, devices: set[str]) -> list[dict]:
        """Drain *devices*: no new session goes there, and every session there moves to the
        least-loaded other device. One row per session: where it goes, or why it stays."""
        self.draining |= devices
        rows = []
        others = [d for d in self.door.devices if d not in self.draining]
        going = [_Going(s.moving.device) for s in self.moving.values()
                 if s.moving.device is not None]   # (counted where they go, not where they are)
        for session in [s for s in self.door.sessions.values() if s.worker.device in devices]:
            row = {"session": session.sid, "user": session.user, "device": session.worker.device}
            try:
                target = least_loaded(others, [s for s in self.door.sessions.values()
                                               if s.worker.device not in devices],
                                      [*self.door.pending, *going],
                                      self.door.settings.max_sessions_per_device,
                                      devices_kept_apart(self.door.sessions.values(), session))
            except SessionLostError as exc:
                row["error"] = (str(exc) if "full" in str(exc) else "every other device holds "
                                "one of its client's other sessions (apart_from): it stays")
                rows.append(row)
                continue
            why = self.start(session, target, "drained")
            row.update({"to": target} if why is None else {"error": why})
            if why is None:
                going.append(_Going(target))
            rows.append(row)
        return rows

    def undrain(self, devices: set[str]) -> None:
        self.draining -= devices

    # ------------------------------------------------------------ the workers' answers
    def parked(self, worker: Any, msg: dict) -> None:
        """The session's old worker has parked it (or says why it could not)."""
        session = worker.session
        move = getattr(session, "moving", None)
        error = msg.get("error")
        manifest = msg.get("manifest")
        if move is None or move.stage != "parking":   # (late: its move was given up)
            if msg.get("lent") is True:   # (it reads the unpark sent, and serves on; or ends)
                if session is None or self.door.sessions.get(session.sid) is not session:
                    nbytes = msg.get("bytes")
                    self._release_worker(worker, nbytes if type(nbytes) is int else 0)
                return
            self._parked_late(worker, session, manifest if error is None else None)
            return
        if error is not None or not isinstance(manifest, (str, bytes)):
            self._refused(session, str(error or "no manifest")[:300])
            return
        move.stage, move.manifest, move.since = "parked", manifest, time.monotonic()
        if session.closing:   # (closed meanwhile: nobody will adopt it)
            self.door.detach_worker(session)
            self.door.end_session(session, "closed by the client")
            return
        batch = msg.get("batch")
        session.ran = batch if type(batch) is int else 0
        # (its last report came first, with what earlier workers counted added already)
        session.carried = {k: session.usage[k] for k in (*CUMULATIVE, "peak")
                           if k in session.usage}
        nbytes = msg.get("bytes")
        if msg.get("lent") is True:   # (its arrays stay in its memory until the adopter has them)
            move.lender = worker
            if type(msg.get("port")) is int:   # (streamed to another host from this port)
                move.stream = f"tcp://{self.door.host_address(worker)}:{msg['port']}"
        else:
            session.usage.update(memory=0, swapped_host=0,   # (all in the directory now)
                                 swapped=nbytes if type(nbytes) is int else 0)
        self.door.detach_worker(session)
        if move.device is not None:
            self.door.keep_spares_for(move.device)
            self.serve()

    def _parked_late(self, worker: Any, session: Any, manifest: Any) -> None:
        """A worker parked after its move was given up (its long batch ended): an open
        session waits parked for its next op; an ended or closing one's files go."""
        if not isinstance(manifest, str):
            return
        if session is None or session.closing or self.door.sessions.get(session.sid) is not session:
            discard(manifest)
            if session is not None and session.closing:
                self.door.end_session(session, "closed by the client")
            return
        session.moving = Move(None, "parked after its move was given up", stage="parked",
                              manifest=manifest)
        self.moving[session.sid] = session
        self.door.detach_worker(session)

    def adopted(self, worker: Any, msg: dict) -> None:
        """The new worker has taken the session over (or could not: it ends, or, lent, goes
        back to the worker that lent it)."""
        session = worker.session
        if session is None:
            return
        move = session.moving
        if move is not None and move.lender is not None and move.stage == "adopting":
            self.moving.pop(session.sid, None)
            session.moving = None
            if msg.get("error") is not None:
                self._back_to_lender(session, move, f"its adopter on {worker.device} failed: "
                                                    f"{str(msg['error'])[:200]}")
                return
            self._release(move)
            self._moved(session, move, worker.device)
            return
        if msg.get("error") is not None:
            log.error("session %s could not be adopted on %s: %s", session.sid, worker.device,
                      msg["error"])
            self.door.end_session(session, f"its move to {worker.device} failed: "
                                           f"{str(msg['error'])[:200]}")

    def adopter_lost(self, worker: Any) -> bool:
        """*worker* ended (its channel closed) while it adopted a lent session: the session
        goes back to the worker that lent it, which still holds every array. Whether it did
        (else the session ends with its worker, as any does)."""
        session = worker.session
        move = getattr(session, "moving", None) if session is not None else None
        if (move is None or move.lender is None or move.stage != "adopting"
                or session.worker is not worker):
            return False
        self._back_to_lender(session, move, f"its new worker on {worker.device} ended "
                                            "before it had the arrays")
        return True

    def lender_lost(self, worker: Any) -> None:
        """*worker* ended while it lent a session: before an adopter took it, the arrays
        went with it (the session ends, saying so, and what it lent in files goes); during
        the adoption, the adopter says whether it has them."""
        for session in list(self.moving.values()):
            move = session.moving
            if move.lender is worker and move.stage == "parked":
                self.door.end_session(session, "its worker ended while it moved the session")
                return

    def _back_to_lender(self, session: Any, move: Move, why: str) -> None:
        """A lent move failed: the session stays with the worker that lent it, which serves
        on with every array (its client never knew), and is told why; the session ends
        where that worker has ended too."""
        adopter = session.worker if session.worker is not move.lender else None
        self.moving.pop(session.sid, None)
        session.moving = None
        if adopter is not None:
            adopter.tell({"t": "stop"})
        lender = move.lender
        if getattr(lender, "channel", True) is None or lender.process.poll() is not None:
            self.door.end_session(session, f"its move failed ({why}), and its old worker "
                                           "has ended")
            discard(move.manifest)
            return
        log.warning("session %s stays on %s: %s", session.sid, lender.device, why)
        self.door.reattach_worker(session, lender)
        lender.tell({"t": "unpark"})
        self.refused += 1
        session.move_refused = why
        session.park_refused_at = session.last_work   # (not moved again until it works)
        for ident in move.waiting:
            self.door.reply_where(ident, session)

    def _refused(self, session: Any, why: str) -> None:
        log.warning("session %s stays on %s: %s", session.sid, session.worker.device, why)
        self.refused += 1
        move, session.moving = session.moving, None
        self.moving.pop(session.sid, None)
        session.move_refused = why
        session.park_refused_at = session.last_work   # (not parked idle again until it works)
        for ident in move.waiting:
            self.door.reply_where(ident, session)

    # ------------------------------------------------------------ each turn of the loop
    def serve(self) -> None:
        """Give each parked session a ready spare of its target device; give up moves that
        took too long (their sessions end, saying so: the arrays are in the manifest's files,
        which go with them)."""
        now = time.monotonic()
        for session in list(self.moving.values()):
            move = session.moving
            if move.device is None:   # (parked until asked for: asked, it is placed now)
                if move.waiting and move.stage == "parked":
                    self.called_back(session)
                if move.device is None:
                    continue
            if move.stage == "parked":
                spare = next((w for w in self.door.hosts.spares(move.device) if w.port is not None),
                             None)
                if spare is not None:
                    self._adopt(session, move, spare)
                    continue
            if move.stage == "adopting" and move.lender is not None \
                    and now - move.since > ADOPT_WAIT:   # (its adopter is stuck: undone)
                self._back_to_lender(session, move, f"its new worker did not take it over "
                                                    f"within {ADOPT_WAIT:g} s")
                continue
            wait = MOVE_WAIT if move.stage == "parking" else SPARE_WAIT
            if move.stage != "adopting" and now - move.since > wait:
                self.moving.pop(session.sid, None)
                if move.stage == "parking":   # (its worker never answered: it stays)
                    session.worker.tell({"t": "unpark"})
                    self._refused(session, f"its worker did not park within {wait:g} s")
                elif move.lender is not None:   # (lent: back where it was, nothing lost)
                    self._back_to_lender(session, move, f"no worker of {move.device} was "
                                                        f"ready within {wait:g} s")
                else:
                    self.door.end_session(session, f"no worker of {move.device} was ready to "
                                                   f"take it over within {wait:g} s")

    def _adopt(self, session: Any, move: Move, spare: Any) -> None:
        move.stage, move.since = "adopting", time.monotonic()
        self.door.assign_worker(session, spare, adopt=move.manifest, adopt_from=move.stream)
        if move.lender is not None:   # (moved once the adopter has copied: adopted())
            return
        self.moving.pop(session.sid, None)
        session.moving = None
        self._moved(session, move, spare.device)

    def _moved(self, session: Any, move: Move, device: str) -> None:
        """*session* is on its new worker: its client may be told where."""
        session.move_refused = None
        session.moved_how = "lent" if move.lender is not None else "files"
        session.moves = getattr(session, "moves", 0) + 1
        self.moved += 1
        log.info("session %s moved to %s (%s)", session.sid, device, move.why)
        for ident in move.waiting:
            self.door.reply_where(ident, session)

    def _release(self, move: Move) -> bool:
        """Tell *move*'s lender to free what it lent and end; whether it was told."""
        return self._release_worker(move.lender, move.held)

    def _release_worker(self, lender: Any, held: int) -> bool:
        """Tell *lender* to free what it lent (*held* device bytes) and end; whether it was
        told. Until it has ended, what it held still fills its device (:meth:`leaving`)."""
        if not lender.tell({"t": "release"}):
            return False
        self._prune()
        self._releasing[lender.wid] = (lender, held, time.monotonic())
        return True

    def leaving(self, device: str) -> dict[str, int]:
        """The lenders of *device* told to release that have not ended yet (for at most
        RELEASE_WAIT), by worker id, with the device bytes each held: memory about to come
        free there. (A session placed where a moved one was, its first allocation made
        before the lender had freed, found the device full of the lender's arrays and
        failed, on a loaded machine: tests/gpu_backend/test_moves.py.)"""
        self._prune()
        return {wid: held for wid, (worker, held, _told) in self._releasing.items()
                if worker.device == device}

    def _prune(self) -> None:
        """Forget the lenders that have ended, and those told RELEASE_WAIT ago (one that
        never ends is not waited for again and again)."""
        now = time.monotonic()
        for wid, (worker, _held, told) in list(self._releasing.items()):
            if now - told > RELEASE_WAIT or not self.door.hosts.has(worker):
                del self._releasing[wid]

    def waiting_devices(self) -> list[str]:
        """The target devices of parked sessions (each wants a spare)."""
        return [s.moving.device for s in self.moving.values()
                if s.moving.stage == "parked" and s.moving.device is not None]

    def forget(self, session: Any) -> None:
        """*session* ended while moving: clients asking where it went are told."""
        move = getattr(session, "moving", None)
        self.moving.pop(session.sid, None)
        if move is None:
            return
        session.moving = None
        if move.lender is not None and self._release(move):
            pass   # (what it lent goes with it, and the manifest)
        elif move.manifest is not None and (move.stage == "parked" or move.lender is not None):
            discard(move.manifest)   # (nobody will adopt it; a lender gone left its files)
        # (still parking: its worker's late "parked" finds it ended and discards: _parked_late)
        for ident in move.waiting:
            self.door.reply_where(ident, session)
