"""A session whose worker changed: the pool moved it to another device (a drain, a restart;
gpu_backend/door/moves.py), and the client follows without the user noticing.

The client learns of a move in one of two ways: its link to the old worker ends (a
same-host Unix socket closes with the worker) or its heartbeat says the session has moved
(``moves``; a tcp link reconnects silently and would wait for ever). Either way it asks the
front door where the session's worker is now (``where``), which answers once the new
worker has the session, with the number of the last batch the old worker ran (``ran``).

Then, in order: the replies of the batches the old worker ran are read from the old link
(it sent them before it parked, and its socket lingers until they are out); the new link is
opened (with its shared-memory ring, on one host); every batch still unanswered is sent
again on it, as it was sent: the client keeps each batch's frames until its reply
(``Session._sent``). Nothing of the user's program changes: the same handles, the same
held stretches (the old worker handed them over), results in order.

What a move cannot carry: a batch whose upload streamed in chunks after it (it is not
kept: the session is lost, saying so), and an upload whose host array the program changed
after the call returned and before its reply came (it is sent again from that memory).
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import zmq

from gpu_backend.protocol import codec
from gpu_backend.protocol.errors import SessionLostError

from . import pushed_replies
from .connection import NoAnswer, door_request
from .links import open_link, worker_address

__all__ = ["LinkEnded", "relink", "WHERE_WAIT", "ASK_EVERY", "REPLY_WAIT"]

#: how long the client waits for the door to say where its session went (a move parks the
#: session, starts a worker if none is spare, and hands it over: seconds, on a busy host
#: tens of them)
WHERE_WAIT = 150.0
#: how long one ``where`` waits before it is asked again (a restarting pool's old door may
#: have taken it and stopped)
ASK_EVERY = 2.0
#: how long the old link may take to deliver the replies of the batches its worker ran
REPLY_WAIT = 30.0


class LinkEnded(SessionLostError):
    """The worker's end of the session's link has gone: the session moved, or is lost
    (:func:`relink` tells which). A SessionLostError where it escapes."""


#: how often one relink follows a session that moves again while it follows
FOLLOWS = 5


def relink(session: Any, reason: str) -> None:
    """Follow *session* to its new worker (module docstring), or lose it with *reason*
    where it did not move. Called with the session's lock held."""
    for _ in range(FOLLOWS):
        try:
            _follow(session, reason)
            return
        except LinkEnded as exc:   # (the new worker ended too: moved again, or lost)
            reason = str(exc)
    session._lose(f"{reason} (the session kept moving: {FOLLOWS} moves in a row)")


def _follow(session: Any, reason: str) -> None:
    info = _where(session)
    moves = info.get("moves")
    if type(moves) is not int or moves == session.moves:   # not moved: the link's loss stands
        refused = info.get("refused")
        session._lose(reason if not refused else f"{reason} (a move was refused: {refused})")
    ran = info.get("ran") if type(info.get("ran")) is int else 0
    _read_replies_of_old(session, ran)
    in_flight = session._in_flight
    if in_flight and in_flight[0][0] <= ran:
        session._lose(f"the session moved to another worker, but the reply of batch "
                      f"{in_flight[0][0]} was lost on the way")
    pushed_replies.send_again(session, ran)   # (answered by a push the old worker never read)
    unsent = [(batch, session._sent[batch]) for batch, _first, _last in in_flight]
    try:
        _open_new_link(session, info)
    except (OSError, zmq.ZMQError) as exc:   # (its worker ended as it was reached: ask again)
        raise LinkEnded(f"the session's new worker could not be reached ({exc})") from None
    session.moves = moves
    for batch, frames in unsent:   # (copied: the frames of an upload may be the caller's
        session.link.send([_copied(f) for f in frames])   # memory, which it may reuse now)
        streamed = session._streamed.get(batch)
        if streamed is not None:   # (a streamed upload's chunks follow its batch, as frames)
            for chunk in chunk_frames(session, streamed):
                session.link.send(chunk)


def chunk_frames(session: Any, streamed: tuple) -> list[list]:
    """A streamed upload's chunk messages as frames, no staging ring (*streamed*: its
    ``Session._streamed`` entry, kernelproxy.streamed): what is sent to a new worker after
    the batch that names it."""
    seq, flat, step = streamed
    chunks = -(-flat.size // step)
    return [[codec.packb({"k": session.key, "u": seq, "i": i}), bytes(flat[i * step:(i + 1) * step])]
            for i in range(chunks)]


def _where(session: Any) -> dict:
    """The door's answer to ``where``, asked again while it does not answer (a pool that
    restarts: its old door stops reading, the new one starts), up to WHERE_WAIT."""
    deadline = time.monotonic() + WHERE_WAIT
    while True:
        try:
            return door_request(session.ctx, session.address,
                                {"t": "where", "session": session.id, "key": session.key},
                                ASK_EVERY, server_key=session.server_key)
        except NoAnswer as exc:   # (its heartbeat gives the pool up first when it has gone)
            if time.monotonic() > deadline or session.heartbeat.lost:
                session._lose(session.heartbeat.lost or f"the session's worker ended and {exc}")
        except SessionLostError as exc:
            session._lose(str(exc))


def _copied(frame: Any) -> Any:
    return frame if type(frame) is bytes else bytes(memoryview(frame).cast("B"))


def _read_replies_of_old(session: Any, ran: int) -> None:
    """Read from the old link the replies of the batches the old worker ran (<= *ran*)."""
    link = session.link
    in_flight = session._in_flight
    while in_flight and in_flight[0][0] <= ran:
        try:
            if not link.poll(int(REPLY_WAIT * 1000)):
                return
            session._take_reply()
        except LinkEnded:   # (its end, after the last reply it sent)
            return


def _open_new_link(session: Any, info: dict) -> None:
    """Close the old link; open the new worker's (and its staging ring, as at the start)."""
    old = session.link
    staged = old.staging is not None
    session._release.detach()
    old.close()
    session.worker_address = worker_address(session.address, info)
    session.link = open_link(session.worker_address, ctx=session.ctx, key=session.key,
                             server_key=session.server_key, lost=session._lost_callback)
    session.device = info.get("device") or session.device
    session.runtime = info.get("runtime") or session.runtime
    session._release = weakref.finalize(session, type(session).release_resources,
                                        session.ctx, session.link, session.heartbeat)
    if staged:
        session.open_staging()
