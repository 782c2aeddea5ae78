"""Replies the worker pushed before their batches went (gpu_backend/worker/pushed_replies.py;
docs/stretch-replay.md, "Replies pushed ahead"): the client's side.

A pushed reply names its batch and carries ``P``, the bytes that batch's message must be.
The client takes it as that batch's reply only where the frame it sent for the batch is
those bytes; otherwise it drops it and waits for the worker's own reply, which then comes.
A push can arrive before its batch is sent (the client was still reading an earlier reply,
or issuing the batch's ops): it is kept (:attr:`PushedReplies.early`) until the batch goes.

A batch answered by a push is *unconfirmed* until any later reply comes (the worker serves
in order, so a later reply says it committed the batch). Until then its frames are kept:

- a reply of its own may still come — the worker could not commit the batch from its run
  ahead and served it as ever, and it failed: its error is raised at the next sync point
  (:func:`settled`);
- the session may move before the worker read the batch: the batch goes to the new worker
  again (kernelproxy/relink.py, :func:`send_again`), and its reply is read and dropped but
  for an error.
"""

from __future__ import annotations

from typing import Any

from .interrupts import interrupts_deferred

__all__ = ["PushedReplies", "take", "use_early", "settled", "send_again"]


class PushedReplies:
    """A session's pushed replies: one come before its batch went (``early``: the reply and
    its frames), the batches answered by a push and not yet confirmed (batch -> their
    frames, first and last op), the batches sent again after a move whose replies are to be
    dropped (``absorbing``), and how many pushes were taken (``taken``)."""

    __slots__ = ("early", "unconfirmed", "absorbing", "taken")

    def __init__(self) -> None:
        self.early: tuple | None = None
        self.unconfirmed: dict[int, tuple] = {}
        self.absorbing: set[int] = set()
        self.taken = 0

    def clear(self) -> None:
        self.early = None
        self.unconfirmed.clear()
        self.absorbing.clear()


def take(session: Any, reply: dict, frames: list) -> bool:
    """Whether a pushed *reply* is the reply of the batch the session waits for now (the
    frame it sent is the push's ``P``): then it is read as that batch's reply, and the batch
    is kept unconfirmed. Kept aside where its batch has not gone yet; else dropped."""
    batch = reply.get("b")
    in_flight = session._in_flight
    if type(batch) is not int:
        return False
    if not in_flight or batch > in_flight[-1][0]:   # (its batch not sent yet)
        session._pushes.early = (reply, frames)
        return False
    if batch != in_flight[0][0]:   # (a batch answered already: a push for nothing)
        return False
    sent = session._sent.get(batch)
    expected = reply.get("P")
    if not sent or len(sent) != 1 or type(expected) is not bytes or bytes(sent[0]) != expected:
        return False   # (another message went: the worker answers it itself)
    pushes = session._pushes
    pushes.unconfirmed[batch] = (sent, in_flight[0][1], in_flight[0][2])
    pushes.taken += 1
    return True


def use_early(session: Any) -> bool:
    """A push that came before its batch went, looked at now that the batch may have gone:
    read as the batch's reply where it is the one waited for, kept where its batch is still
    to go, else dropped (its batch went and was answered otherwise). Whether it was read or
    dropped."""
    pushes = session._pushes
    early = pushes.early
    in_flight = session._in_flight
    if early is None or not in_flight:
        return False
    reply, frames = early
    batch = reply.get("b")
    if type(batch) is int and batch > in_flight[-1][0]:
        return False   # (still to go)
    pushes.early = None
    if type(batch) is int and batch == in_flight[0][0] and take(session, reply, frames):
        with interrupts_deferred:
            session._apply_reply(reply, frames)
    return True


def settled(session: Any, reply: dict) -> bool:
    """Whether *reply* belongs to a batch a push answered (then it is dealt with here: an
    error raised at the next sync point, anything else dropped). Any later reply confirms
    the batches before it."""
    pushes = session._pushes
    batch = reply.get("b")
    if type(batch) is not int:
        return False
    if batch in pushes.absorbing:   # (sent again after a move: its reply read, dropped)
        pushes.absorbing.discard(batch)
        in_flight = session._in_flight
        if in_flight and in_flight[0][0] == batch:
            in_flight.popleft()
        session._sent.pop(batch, None)
        _late_error(session, reply)
        return True
    if batch in pushes.unconfirmed and "P" not in reply:   # (served as ever, and failed)
        del pushes.unconfirmed[batch]
        _late_error(session, reply)
        return True
    for earlier in [b for b in pushes.unconfirmed if b < batch]:
        del pushes.unconfirmed[earlier]
    return False


def _late_error(session: Any, reply: dict) -> None:
    """A batch the client took a pushed reply for failed after all: its error is the
    session's, raised at the next sync point (the values already given stand; the arrays
    the batch made may not exist)."""
    error = reply.get("e")
    if error is not None and session._error is None:
        session._error = error
        session._resume = error[0] if type(error[0]) is int else session._resume
    if reply.get("z"):
        session._ended = f"the session's worker has ended: {reply['z']}"


def send_again(session: Any, ran: int) -> None:
    """After a move (kernelproxy/relink.py): the batches a push answered that the old worker
    had not read (after *ran*) go back in flight, first, to be sent to the new worker with
    the others, their replies to be read and dropped (:func:`settled`)."""
    pushes = session._pushes
    again = sorted((b, v) for b, v in pushes.unconfirmed.items() if b > ran)
    pushes.unconfirmed.clear()
    pushes.early = None   # (the old worker's push: the new one answers for itself)
    for batch, (frames, first, last) in reversed(again):
        session._in_flight.appendleft((batch, first, last))
        session._sent[batch] = frames
        pushes.absorbing.add(batch)
