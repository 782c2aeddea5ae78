"""Replies the worker pushed before their batches went (gpu_backend/worker/pushed_replies.py;
docs/stretch-replay.md, "Replies pushed ahead"): the client's side.

A pushed reply names its batch and carries ``P``, the bytes that batch's message must be,
``C``, its chain, and ``K``, the last batch the worker had read when it pushed. The client
takes it as that batch's reply only where the frame it sent for the batch is those bytes;
otherwise it drops it, and every later push of its chain (the worker made them from a state
that batch changed; it rolls them back and pushes anew on another chain), and waits for the
worker's own reply, which then comes. A push can arrive before its batch is sent (the client
was still reading an earlier reply, or issuing the batch's ops): it is kept
(:attr:`PushedReplies.early`) until the batch goes.

A batch answered by a push is *unconfirmed* until the worker says it read it (a later push's
``K``, or any later reply of its own). Until then its frames are kept:

- a reply of its own may still come — the worker could not commit the batch from its run
  ahead and served it as ever, and it failed: its error is raised at the next sync point; or
  it served it again after undoing a commit made ahead (a move asked and not made): dropped
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
    """A session's pushed replies: those come before their batches went (``early``: batch ->
    the reply and its frames), the batches answered by a push and not yet read by the worker
    (batch -> their frames, first and last op), the batches sent again after a move whose
    replies are to be dropped (``absorbing``), the last chain a push of which was dropped
    (``void``: its later pushes are dropped too), and how many pushes were taken (``taken``)."""

    __slots__ = ("early", "unconfirmed", "absorbing", "void", "taken")

    def __init__(self) -> None:
        self.early: dict[int, tuple] = {}
        self.unconfirmed: dict[int, tuple] = {}
        self.absorbing: set[int] = set()
        self.void = -1
        self.taken = 0

    def clear(self) -> None:
        self.early.clear()
        self.unconfirmed.clear()
        self.absorbing.clear()


def take(session: Any, reply: dict, frames: list) -> bool:
    """Whether a pushed *reply* is the reply of the batch the session waits for now (the
    frame it sent is the push's ``P``, and its chain stands): then it is read as that
    batch's reply, and the batch is kept unconfirmed. Kept aside where its batch has not
    gone yet; else dropped, with the rest of its chain where the bytes differ."""
    pushes = session._pushes
    batch, chain = reply.get("b"), reply.get("C")
    if type(batch) is not int or type(chain) is not int or chain <= pushes.void:
        return False
    _confirm(pushes, reply.get("K"))
    in_flight = session._in_flight
    if not in_flight or batch > in_flight[-1][0]:   # (its batch not sent yet)
        pushes.early[batch] = (reply, frames)
        return False
    if batch != in_flight[0][0]:   # (a batch answered already: a push for nothing)
        return False
    sent = session._sent.get(batch)
    expected = reply.get("P")
    if not sent or len(sent) != 1 or type(expected) is not bytes or bytes(sent[0]) != expected:
        pushes.void = chain   # (another message went: the worker answers it itself, and
        return False          # rolls this chain back)
    pushes.unconfirmed[batch] = (sent, in_flight[0][1], in_flight[0][2])
    pushes.taken += 1
    run = session._run_origins.get(batch)
    if run is not None and run.template.early_plan is not None:
        run.template.early_plan.pushed()   # (its runs sent whole for this: kept so)
    return True


def _confirm(pushes: PushedReplies, read: Any) -> None:
    """The worker says it read every batch up to *read*: those a push answered are done."""
    if type(read) is int and pushes.unconfirmed:
        for batch in [b for b in pushes.unconfirmed if b <= read]:
            del pushes.unconfirmed[batch]


def use_early(session: Any) -> bool:
    """The pushes that came before their batches went, looked at now that the oldest batch
    in flight may be one: read as its reply where it is, kept where their batches are still
    to go, dropped where theirs went and were answered otherwise. Whether one was read or
    dropped."""
    pushes = session._pushes
    in_flight = session._in_flight
    if not pushes.early or not in_flight:
        return False
    waited = in_flight[0][0]
    changed = False
    for batch in sorted(pushes.early):
        if batch > waited:
            break
        reply, frames = pushes.early.pop(batch)
        changed = True
        if batch == waited and take(session, reply, frames):
            with interrupts_deferred:
                session._apply_reply(reply, frames)
            return True
    return changed


def settled(session: Any, reply: dict) -> bool:
    """Whether *reply*, not a push, belongs to a batch a push answered (then it is dealt
    with here: an error raised at the next sync point, anything else dropped). Any other
    reply of the worker's own confirms the batches before it."""
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
        session._failed(reply)   # (its error, if any: raised at the next sync point)
        return True
    if "P" in reply:   # (a push: its K confirms, read in take)
        return False
    if batch in pushes.unconfirmed:   # (served as ever after all: failed, or served again)
        del pushes.unconfirmed[batch]
        session._failed(reply)   # (its error, if any: raised at the next sync point)
        return True
    _confirm(pushes, batch - 1)   # (a reply of the worker's own: it read every batch before)
    return False


def send_again(session: Any, ran: int) -> None:
    """After a move (kernelproxy/relink.py): the batches a push answered that the old worker
    had not read (after *ran*) go back in flight, first, to be sent to the new worker with
    the others, their replies to be read and dropped (:func:`settled`)."""
    pushes = session._pushes
    again = sorted((b, v) for b, v in pushes.unconfirmed.items() if b > ran)
    pushes.unconfirmed.clear()
    pushes.early.clear()   # (the old worker's pushes: the new one answers for itself)
    pushes.void = -1   # (chains are the old worker's: the new one numbers its own from 0)
    for batch, (frames, first, last) in reversed(again):
        session._in_flight.appendleft((batch, first, last))
        session._sent[batch] = frames
        pushes.absorbing.add(batch)
