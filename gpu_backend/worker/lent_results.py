"""Results lent out of a held stretch's graphs, and taken back before a graph writes them
again (ping-pong buffers, docs/stretch-replay.md).

A replay through graphs used to hand every result the client keeps to its handle as a
fresh copy, since the graph writes the same buffer at its next launch. With ping-pong the
graph's own result buffer goes to the handle: it is *lent* (a :class:`Loan`). Before any
graph of the stretch writes that buffer again (as a result, or as an input buffer it
copies into), the loan is *reclaimed* (:meth:`Loans.reclaim`): what still sees the buffer
is counted with reference counts, as NumPy's ``ndarray.resize(refcheck=True)`` does:

* nothing but the graphs: the buffer is the graph's again;
* its handle, and nothing else: the buffer is copied out to a fresh array that the handle
  holds from then on (the client's values never change);
* anything else (a view made by a later batch, ``x[1:]``, ``x.T``; another handle to the
  same object; an array made over its memory): the graph must not write it. The caller
  drops the stretch's graphs (the buffer is simply the handle's own array from then on).

Counting: the references the graphs themselves hold (their dicts of buffers and results,
their recorded calls, their retained memory, the views among them) are tallied by walking
those structures once each time the graphs change; the references the count itself makes
are measured once on a canary. Whatever the two do not explain is someone else's: a count
too low only costs a copy or a capture, never a result (what is counted beyond the real
references would, so nothing is counted that the walk did not find).
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["Loan", "Loans", "SEEN_BY_OTHERS"]

#: what :meth:`Loans.reclaim` answers when something other than the handle sees a buffer
SEEN_BY_OTHERS = "seen"


class Loan:
    """A graph's result buffer lent to a handle (*hid*); *held*: the references that
    holding it adds (the table's, and a device's count of the memory its arrays use: the
    NumPy device keeps each owner), measured as it was put there."""

    __slots__ = ("buffer", "hid", "held")

    def __init__(self, buffer: Any, hid: int, held: tuple = ()) -> None:
        self.buffer = buffer
        self.hid = hid
        self.held = held


class Loans:
    """One held stretch's lent buffers, by the buffer's id, and the counts that tell who
    else sees them."""

    def __init__(self, tools: Any) -> None:
        self.tools = tools
        self.by_id: dict[int, Loan] = {}
        #: references the graphs hold to each array (and pointer, memory) in them, by id;
        #: None: to be walked again (the graphs changed)
        self._internal: dict[int, int] | None = None
        self._visited: set[int] = set()
        #: what the count itself holds, measured once on a canary held only by a Loan
        self._frame: tuple | None = None

    def __len__(self) -> int:
        return len(self.by_id)

    def lend(self, table: Any, hid: int, buffer: Any) -> None:
        """Put *buffer* under *hid* in *table*, lent (what holding it adds is measured
        across the put; out of memory there: nothing is stored, nothing lent)."""
        loan = Loan(buffer, hid)
        before = self.tools.refs(loan)
        table.put(hid, buffer)
        after = self.tools.refs(loan)
        loan.held = tuple(a - b for a, b in zip(after, before))
        self.by_id[id(buffer)] = loan

    def get(self, buffer: Any) -> Loan | None:
        loan = self.by_id.get(id(buffer))
        return loan if loan is not None and loan.buffer is buffer else None

    def forget(self) -> None:
        """The graphs are gone: every lent buffer is its handle's own array from now on."""
        self.by_id.clear()
        self._internal, self._visited = None, set()

    def changed(self) -> None:
        """The graphs changed (one captured, or dropped): walk them again at the next count."""
        self._internal = None

    # ------------------------------------------------------------ counting
    def _walk(self, roots: Iterable) -> None:
        """Count the references the graphs' structures (*roots*) hold to each array (and,
        on a GPU, memory pointer and memory) in them: each container and array is looked
        into once, every edge counted once (a real reference each: nothing is counted
        that is not there)."""
        tools = self.tools
        tally: dict[int, int] = {}
        visited: set[int] = set()
        stack = list(roots)
        visited.update(id(o) for o in stack)
        while stack:
            o = stack.pop()
            if isinstance(o, dict):
                items: Iterable = o.values()
            elif isinstance(o, (list, tuple)):
                items = o
            else:
                items = tools.links(o)
            for e in items:
                if e is None:
                    continue
                if isinstance(e, (dict, list, tuple)):
                    if id(e) not in visited:
                        visited.add(id(e))
                        stack.append(e)
                else:   # (an edge to anything: a GPU array's memory is no array)
                    i = id(e)
                    tally[i] = tally.get(i, 0) + 1
                    if i not in visited and tools.linked(e):
                        visited.add(i)
                        stack.append(e)
        self._internal, self._visited = tally, visited

    def _frame_counts(self) -> tuple:
        if self._frame is None:
            self._frame = self.tools.refs(Loan(self.tools.canary(), 0))
        return self._frame

    def others(self, loan: Loan, roots: Iterable, table: Any, arrays: dict) -> int:
        """How many references to *loan*'s buffer (its array; on a GPU also its memory
        pointer and its memory) neither the graphs (*roots*), this replay's inputs
        (*arrays*), its handle nor the count itself hold: 0 when nothing else sees it (a
        count off either way is not 0)."""
        frame = self._frame_counts()
        if self._internal is None:
            self._walk(roots)
        held = 1 if table.arrays.get(loan.hid) is loan.buffer else 0
        given = sum(1 for a in arrays.values() if a is loan.buffer)
        counts = self.tools.refs(loan)   # (no local names the buffer before this count)
        internal, visited = self._internal, self._visited
        chain = self.tools.watched(loan.buffer)   # (each holds the next: its edge is the frame's)
        extra = 0
        for k, obj in enumerate(chain):
            expected = frame[k] + internal.get(id(obj), 0) + (loan.held[k] if held else 0)
            if k == 0:
                expected += given
            elif id(chain[k - 1]) in visited:
                expected -= 1   # (the edge from the one before, walked, is also in the frame)
            extra += abs(counts[k] - expected)
        return extra

    def reclaim(self, loan: Loan, roots: Iterable, table: Any, arrays: dict) -> str:
        """Take *loan*'s buffer back before a graph writes it: "free" (nothing but the
        graphs saw it), "copied" (its handle did, and nothing else: the handle now holds a
        copy, and so do this replay's inputs that were it), or SEEN_BY_OTHERS (the caller
        must not write it; the loan stays until the graphs are dropped)."""
        if self.others(loan, roots, table, arrays):
            return SEEN_BY_OTHERS
        if table.arrays.get(loan.hid) is not loan.buffer:
            self.by_id.pop(id(loan.buffer), None)
            return "free"
        tools = self.tools
        copy = tools.empty_like(loan.buffer)
        tools.copy(copy, loan.buffer)
        table.put(loan.hid, copy)   # (out of memory here: the loan stays, the handle unchanged)
        self.by_id.pop(id(loan.buffer), None)
        for n in [n for n, a in arrays.items() if a is loan.buffer]:
            arrays[n] = copy
        return "copied"
