"""The pool's OS user ↔ the administration socket (``gpuwb-backend drain``, moves, a restart's
parked sessions). One ``TypedDict`` per message; the package's docstring (``__init__``) says
how they are read and rendered, and every name is taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Literal, NotRequired, TypedDict

__all__ = ["AdminDrain", "AdminUndrain", "AdminMove", "AdminMoves", "AdminRestart", "ParkedSession",
           "ParkedSessions", "AdminMoveRow", "AdminSessionRow", "AdminReply"]


class AdminDrain(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend drain``): place no
    new session on these devices and move every session there elsewhere."""
    t: Annotated[Literal["drain"], "the message type"]
    devices: Annotated[list[str], "the pool's device names (cuda:0, cpu:1)"]


class AdminUndrain(TypedDict):
    """the pool's OS user → the administration socket: place sessions there again."""
    t: Annotated[Literal["undrain"], "the message type"]
    devices: Annotated[list[str], "the pool's device names"]


class AdminMove(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend move``)."""
    t: Annotated[Literal["move"], "the message type"]
    session: Annotated[str, "the session's id"]
    device: Annotated[str, "the device to move it to"]


class AdminMoves(TypedDict):
    """the pool's OS user → the administration socket: where every session is."""
    t: Annotated[Literal["moves"], "the message type"]


class AdminRestart(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend restart``): park
    every session in the swap directory and stop; ``gpuwb-backend serve`` starts again."""
    t: Annotated[Literal["restart"], "the message type"]


class ParkedSession(TypedDict):
    """A :class:`ParkedSessions` record: one session parked for the next pool."""
    session: Annotated[str, "the session's id (the client asks where it is by it)"]
    key: Annotated[bytes, "the session key (the file is 0600 in a 0700 folder)"]
    user: Annotated[str, "its user (a user no longer in the users file loses it)"]
    client: Annotated[str, "the client's label for itself"]
    label: Annotated[str, "what opened it"]
    memory_limit: Annotated[int, "its memory limit, bytes"]
    grant: Annotated[int | None, "its grant under the user's quota (None: no quota)"]
    device: Annotated[str, "the device it was on (taken again where the next pool has it)"]
    manifest: Annotated[str, "its worker's manifest (worker/handover.py)"]
    ran: Annotated[int, "the last batch its worker ran"]
    moves: Annotated[int, "how often it had moved"]


class ParkedSessions(TypedDict):
    """What a pool stopped with SIGTERM leaves for the next (``restart/sessions.msgpack``
    in its swap directory, 0600; door/restarts.py)."""
    v: Annotated[Literal[1], "the records' version"]
    sessions: Annotated[list[ParkedSession], "one record per parked session"]


class AdminMoveRow(TypedDict):
    """An :class:`AdminReply`'s ``moves`` row: one session a drain moves, or why it stays."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "the device it is on"]
    to: NotRequired[Annotated[str, "where it goes"]]
    error: NotRequired[Annotated[str, "why it stays"]]


class AdminSessionRow(TypedDict):
    """An :class:`AdminReply`'s ``sessions`` row."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "the device whose worker serves it (until a move is done: the old one)"]
    moving: Annotated[str | None, "the device it is moving to, or None"]
    moves: Annotated[int, "how often it has moved"]
    how: Annotated[str | None, "how its last move went: lent (device to device, within a host) or files (through the swap directory); None: it never moved"]
    refused: Annotated[str | None, "why its last move did not happen, or None"]


class AdminReply(TypedDict):
    """administration socket → the pool's OS user: the answer to any request."""
    ok: Annotated[bool, "whether it was done (False: ``error`` says why)"]
    error: NotRequired[Annotated[str, "why not"]]
    moves: NotRequired[Annotated[list[AdminMoveRow], "a drain's moves"]]
    draining: NotRequired[Annotated[list[str], "the devices being drained now"]]
    sessions: NotRequired[Annotated[list[AdminSessionRow], "every open session (``moves``)"]]
    open: NotRequired[Annotated[int, "the sessions open, to be parked (``restart``)"]]
