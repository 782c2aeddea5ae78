"""The stretches a session's client offered: held, run again from a replay entry.

A *stretch* is the ops between two sync points. A client that has seen one stretch (a
batch) repeat offers it with the batch (header ``O``: the stretch's id); once that batch
ran without an error the worker keeps it as a :class:`HeldStretch` and says so in the
reply (``h``). From then on the client sends a replay entry (header ``T``: the id, the
first op's sequence number, the new inputs' handles, the scalar parameters' values, the
results' new handles) instead of the ops.

Every replay can be run as a *re-run*: :meth:`HeldStretch.rebuild` writes the very records
the client would have sent (each op's number, its arguments with the new handles and
values), and the executor runs them as any batch, so its results, errors and warnings are
today's by construction. That is every replay where no graph serves (a device without
graph tools, ``GPUWB_GRAPHS=rerun``), and the fallback of a held stretch's graph
(worker/graph_replay.py) whenever it cannot serve.

Inputs and parameters are numbered by the walk that ``gpu_backend.protocol.stretches``
sets out, the one the client's key uses (kernelproxy/stretch_key.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..protocol.errors import ProtocolError
from ..protocol.stretch_records import Op, Slot, StretchRecords, fill_slots, read_records
from ..protocol.stretches import MAX_HELD, MAX_STRETCH_OPS

__all__ = ["Slot", "Op", "HeldStretch", "HeldStretches", "ReplayEntry", "fill_slots",
           "read_records"]


#: the one type a list of handles holds
_INT = {int}


class HeldStretch(StretchRecords):
    """A stretch as the worker keeps it (:class:`StretchRecords`), with the counts a replay
    entry must match. What its graphs have learnt is not here: that is graph replay's
    (worker/graph_replay.py, ``GraphState``)."""

    # ------------------------------------------------------------ re-run
    def check(self, inputs: Any, params: Any, outs: Any) -> None:
        """A replay entry's lists must fit the stretch (a client's bug otherwise)."""
        if (type(inputs) is not list or type(params) is not list or type(outs) is not list
                or len(inputs) != self.inputs or len(params) != self.params
                or len(outs) != self.outs):
            raise ProtocolError("a stretch replay whose inputs, parameters or results do not "
                                "fit the stretch")
        # (each list's types at once, in C: a loop of 20 results cost ~8 µs on an H200 host)
        if inputs and set(map(type, inputs)) != _INT:
            raise ProtocolError("a stretch replay's inputs are handles")
        if outs and (set(map(type, outs)) != _INT or min(outs) <= 0):
            raise ProtocolError("a stretch replay's results are positive handles")

class ReplayEntry(NamedTuple):
    """A replay entry (header ``T``), checked against the stretch it names."""

    sid: int        # the stretch's id
    first: int      # its first op's sequence number in this run
    inputs: list    # the handles of its inputs, by input slot
    params: list    # the values of its scalar parameters, by parameter slot
    outs: list      # the new handles of its results, by result slot
    #: the result slots whose metadata the client wants in the reply (None: every result it
    #: keeps; a client answering from its template knows the rest: kernelproxy/stretch_templates.py)
    need: list | None = None
    #: an early replay (header ``S``): the inputs the stretch drops are kept, for the client
    #: frees them itself once its run has matched the entry (kernelproxy/early_replay.py)
    early: bool = False
    #: the data of the stretch's uploads, a frame each in their order (HeldStretch.uploads;
    #: empty where it makes none): the replay's message's frames after its header
    frames: tuple = ()


class HeldStretches:
    """A session's held stretches by the client's ids, and the offers not kept."""

    def __init__(self, enabled: bool = True) -> None:
        #: whether offers are kept at all (``GPUWB_GRAPHS=0``: none is)
        self.enabled = enabled
        self.held: dict[int, HeldStretch] = {}
        self.refused = 0      # offers not kept

    @staticmethod
    def read(body: bytes) -> HeldStretch | None:
        """The stretch the batch *body* (an offer) holds, read before it runs; None when it
        does not read (it is then not kept)."""
        try:
            held = HeldStretch(read_records(body))
        except Exception:   # (a batch that runs decodes; anything odd is simply not kept)
            return None
        held.body = bytes(body)   # (what a session handed to another worker carries)
        return held

    def offer(self, sid: Any, stretch: HeldStretch | None, ops: int) -> HeldStretch | None:
        """Keep *stretch* (its batch ran without error) as stretch *sid*; the held stretch,
        or None where it is not kept."""
        if (stretch is None or not self.enabled or type(sid) is not int or sid in self.held
                or len(self.held) >= MAX_HELD or not 0 < ops <= MAX_STRETCH_OPS):
            self.refused += 1
            return None
        self.held[sid] = stretch
        return stretch

    def drop(self, sids: Any) -> None:
        """The client lets these stretches go: an id not held is no error (an offer
        refused meanwhile)."""
        if type(sids) is not list or len(sids) > MAX_HELD or any(type(s) is not int for s in sids):
            raise ProtocolError("malformed stretch drops: a list of at most "
                                f"{MAX_HELD} stretch ids")
        for sid in sids:
            self.held.pop(sid, None)

    def entry(self, raw: Any, early: bool = False) -> tuple[HeldStretch, ReplayEntry]:
        """The held stretch a replay entry names, and the entry, checked against it (a
        ProtocolError otherwise)."""
        if type(raw) is not list or len(raw) not in (5, 6) or type(raw[1]) is not int:
            raise ProtocolError("malformed stretch replay")
        sid = raw[0]
        stretch = self.held.get(sid) if type(sid) is int else None
        if stretch is None:
            raise ProtocolError(f"no stretch {sid!r} is held for this session")
        stretch.check(*raw[2:5])
        if len(raw) == 6:
            need = raw[5]
            if type(need) is not list or any(type(n) is not int or not 0 <= n < stretch.outs
                                             for n in need):
                raise ProtocolError("a stretch replay's wanted metadata names its result slots")
        return stretch, ReplayEntry(*raw[:5], raw[5] if len(raw) == 6 else None, early)

    @staticmethod
    def with_frames(stretch: HeldStretch, entry: ReplayEntry, payload: Any) -> ReplayEntry:
        """*entry* given the data of *stretch*'s uploads, the replay message's frames after
        its header (*payload*, an iterator): one each, no more, and never for an early
        replay (sent before its run's uploads were made). A ProtocolError otherwise."""
        frames = tuple(payload)
        if len(frames) != len(stretch.uploads):
            raise ProtocolError(f"a stretch replay with {len(frames)} data frames for "
                                f"{len(stretch.uploads)} uploads")
        if frames and entry.early:
            raise ProtocolError("an early stretch replay cannot carry its uploads' data")
        return entry._replace(frames=frames) if frames else entry
