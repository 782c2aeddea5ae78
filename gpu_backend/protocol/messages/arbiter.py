"""A worker ↔ the pool's arbiter: wants, reports of device time, grants and yields. One
``TypedDict`` per message; the package's docstring (``__init__``) says how they are read and
rendered, and every name is taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Literal, NotRequired, TypedDict

__all__ = ["ArbiterWant", "ArbiterIdle", "ArbiterDone", "ArbiterUsed", "ArbiterRelease",
           "ArbiterGrant", "ArbiterReady", "ArbiterCompany", "ArbiterYield"]


class ArbiterWant(TypedDict):
    """worker → arbiter: it has work and does not hold the device (again after 1 s without
    a word; from the holder, answered with its grant once more)."""
    t: Annotated[Literal["want"], "the message type"]
    h: NotRequired[Annotated[bool, "``share``: it holds a standing grant, said it was idle and has launched work again (not waited on)"]]


class ArbiterIdle(TypedDict):
    """worker → arbiter, ``share`` only: it holds a standing grant and has run out of work
    (its batch's closing read has begun, or its batch ended)."""
    t: Annotated[Literal["idle"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]
    ahead: NotRequired[Annotated[float, "wall seconds its launched work is estimated to run still (beside others; it says ``done`` after)"]]


class ArbiterDone(TypedDict):
    """worker → arbiter, ``share`` only: the work it had launched when it said ``idle`` with
    ``ahead``, or when it gave a standing grant back with ``d``, has run."""
    t: Annotated[Literal["done"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]


class ArbiterUsed(TypedDict):
    """worker → arbiter, while holding: its measured device time."""
    t: Annotated[Literal["used"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]


class ArbiterRelease(TypedDict):
    """worker → arbiter: it hands the device over."""
    t: Annotated[Literal["release"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    want: Annotated[bool, "it still has work (asks again at once)"]
    g: Annotated[int | None, "the grant it hands back"]
    ahead: NotRequired[Annotated[float, "estimated device seconds of work launched and not yet measured (charged until the next report)"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]
    r: NotRequired[Annotated[bool, "it hands over as its batch's closing read begins, nothing queued behind it: keep the device idle for nobody"]]
    d: NotRequired[Annotated[bool, "``share``: a standing grant given back with work still running: a ``done`` follows when it has run (until then the session shares the device)"]]


class ArbiterGrant(TypedDict):
    """arbiter → worker: it may launch work on the device."""
    t: Annotated[Literal["grant"], "the message type"]
    q: Annotated[float | None, "others wait: hand over after this many device seconds (None: keep it until told)"]
    b: Annotated[bool, "others wait: hand over when the batch ends (fifo)"]
    g: Annotated[int, "the grant's number, which its release names"]
    k: Annotated[int | None, "the worker's slot in the baton file, or None"]
    w: NotRequired[Annotated[list[int], "[slot, grant]: wait until that slot reads that grant's work done before launching"]]
    wt: NotRequired[Annotated[float, "after a preemption: the longest to wait for w, seconds"]]
    a: NotRequired[Annotated[bool, "no other session is attached to the device (a longer queue is allowed)"]]
    s: NotRequired[Annotated[bool, "``share``: a standing grant: launch beside the others until told, say ``idle`` when out of work"]]
    l: NotRequired[Annotated[float, "``share`` with a deep lead: seconds of work this standing holder may launch ahead (absent: its own)"]]
    p: NotRequired[Annotated[bool, "``share`` with the pool's ``share_light_company``: false where its company is only light users, whose long replays it need not pace (absent: true)"]]
    d: NotRequired[Annotated[bool, "``share`` with the pool's ``share_deep_company``: true where its session and its weighing company all keep their work backlogged, so that a long replay whose next message already waits need not be paced (absent: false)"]]


class ArbiterReady(TypedDict):
    """arbiter → worker: it is next; be awake when the grant comes."""
    t: Annotated[Literal["ready"], "the message type"]
    q: Annotated[float, "its grant is due in about this many device seconds"]


class ArbiterCompany(TypedDict):
    """arbiter → a worker whose company on its device changed: another session attached or
    left, or (``share``) one with no work went silent past the pool's ``company_idle_ms`` or
    spoke again; under ``share`` with a deep lead, to a worker whose lead changed too; with
    ``share_light_company``, whether its company weighs changed (a user's history turned
    light or heavy); with ``share_deep_company``, whether it and its company are deep."""
    t: Annotated[Literal["company"], "the message type"]
    a: Annotated[bool, "the worker's session is now alone on its device (no other session there is company)"]
    l: NotRequired[Annotated[float | None, "``share`` with a deep lead: the seconds of work it may launch ahead from now (None: its own)"]]
    p: NotRequired[Annotated[bool, "``share`` with the pool's ``share_light_company``: false where its company is only light users, whose long replays it need not pace (absent: true)"]]
    d: NotRequired[Annotated[bool, "``share`` with the pool's ``share_deep_company``: true where its session and its weighing company all keep their work backlogged, so that a long replay whose next message already waits need not be paced (absent: false)"]]


class ArbiterYield(TypedDict):
    """arbiter → the holder: others wait now (ignored unless ``g`` is the grant held)."""
    t: Annotated[Literal["yield"], "the message type"]
    q: Annotated[float, "hand over after this many more device seconds (0: at once)"]
    b: Annotated[bool, "hand over when the running batch ends"]
    g: Annotated[int, "the grant it concerns"]
