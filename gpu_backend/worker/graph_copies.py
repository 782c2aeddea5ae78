"""A captured stretch's copies in and out, made by its graphs (worker/graph_replay.py).

The first graph begins with one kernel that copies every input into the buffer the graph
reads: the first segment's graph, or the first graph after eager segments that read no
input (a loop that draws a ``RandomState``'s numbers first, eagerly, then computes). It
copies each moving view it gathers too, made at the replay's bounds before the launch
(worker/moving_views.py, ``StretchGraph.gathered``; an input only such views slice is read
where it is, not copied), and the arrays the eager ops before it made, into the buffers the
graphs read them from. A later graph begins with a kernel of its own that copies the arrays
of the eager ops since the graph before it (a draw between two graphs). The last graph ends
with one that copies every kept result the graphs made into the fresh array a replay hands
out, allocated before the launch. Each is a *copy table* (devices/cupy_graphs.py
``CopyTable``; the NumPy device's ``HostCopyTable``) whose rows (source, destination, bytes)
sit after the parameters in the stretch's parameter block, so the one host-to-device copy of
the parameters writes them too. A replay sets two pointers a row. (A ``cudaMemcpyAsync``
costs 5-9 µs of the worker's time on an H200 host, three to six graph launches:
benchmarks/worker_calls_probe.py.)

Where an eager segment before the first graph reads an input, or that graph refuses capture,
the inputs are copied one by one before the launch; where a result's layout changed under an
eager op, so that the graphs after it are not launched, the copies they would have made are
made apart before their ops run eagerly; where the last graph is not launched (an eager op
before it failed, or a result's layout changed), the kept results are copied after, as
before.
"""

from __future__ import annotations

from sys import getrefcount
from typing import Any

__all__ = ["GraphCopies", "COPY_ROW_BYTES", "PREPARE_MAX_BYTES", "SPARES", "SPARE_BYTES", "plain",
           "identity"]

#: bytes of a copy table's row in the parameter block (three uint64)
COPY_ROW_BYTES = 24
#: the most bytes of kept results a stretch's next replay has made ahead (:meth:`prepare`):
#: they are held while the session waits
PREPARE_MAX_BYTES = 16 << 20
#: arrays a kept result's slot remembers having made (:meth:`GraphCopies._made_for`): a
#: loop-carried result is dropped by the client two replays after it was made (its free
#: comes with the replay after next), so three let a loop's results take turns in them;
#: only arrays of at most SPARE_BYTES (one nobody holds counts in the session's memory, and
#: a large one's allocation is small beside its graphs' work)
SPARES = 3
SPARE_BYTES = 1 << 20


class GraphCopies:
    """One captured stretch's copy tables: ``gather`` (the inputs, in ``gather_slots``'s
    order; None: copied one by one) and ``scatter`` (the kept results, made by the graph
    segment ``scatter_seg``; ``scatter_slots`` has (result slot, its buffer, a maker of
    arrays of its layout) a row; None: copied after)."""

    def __init__(self) -> None:
        self.gather: Any = None
        self.gather_slots: list[int] = []
        #: the segment whose graph gathers the inputs (-1: none)
        self.gather_seg = -1
        #: by result slot, the copy table and its row that copy the result of an eager op
        #: (a ``RandomState``'s draw) into the buffer the graphs read, made by the next graph
        #: (:meth:`gather_eager`): the gather table's rows after the inputs' for the eager
        #: ops before the first graph, a table of the graph's own for those before a later one
        self.eager_rows: dict[int, tuple] = {}
        #: the later graphs' tables, by segment (:meth:`capture_between`)
        self._between: dict[int, Any] = {}
        #: the rows set at this replay, not yet committed: (table, buffer, array)
        self._rowed: list = []
        self.scatter: Any = None
        self.scatter_slots: list[tuple] = []
        self.scatter_seg = -1
        #: the next replay set up ahead (:meth:`prepare`): its inputs by slot, as
        #: predicted, and its kept results' arrays; None: set up at the replay
        self._prepared: tuple | None = None
        #: the last replay's input and result handles, and where each input came from
        #: against the replay before it (:meth:`learn`): by input slot, (carried, slot):
        #: a result slot of the last replay, or an input slot of it (the same one, or
        #: another: buffers that take turns)
        self._last_entry: tuple | None = None
        self._next_inputs: dict | None = None
        #: where each input came from when this stretch's replay followed another's (the
        #: same handle as its own last replay's, or one of the other replay's results or
        #: inputs: a loop of two stretches taking turns, worker/run_ahead.py ``follows``)
        self._after_inputs: dict | None = None
        #: by kept result slot: the arrays made for it lately, the newest last (:meth:`_made_for`)
        self._spares: dict[int, list] = {}

    # ------------------------------------------------------------ capture
    def capture_in(self, tools: Any, block: Any, host: Any, at: int, arrays: dict,
                   bufs: dict, seg_at: int = 0, eager: dict | None = None) -> None:
        """While capturing the first graph (segment *seg_at*: the first, or the first after
        eager ones that read no input): the inputs' copies, as its first node (its rows set
        again at each replay), from the table at *at* bytes into *block*; and the results of
        the eager ops before it (*eager*, by slot: the buffers the graphs read), each copied
        there from the array its op makes at a replay (:meth:`gather_eager`; at the capture
        a row copies a buffer onto itself, nothing)."""
        eager = eager or {}
        table = tools.copy_table(block, host, at, len(arrays) + len(eager))
        self.gather_seg = seg_at
        self.gather_slots = list(arrays)
        for row, n in enumerate(self.gather_slots):
            table.prepare(row, bufs[n], arrays[n])
        for row, (n, buf) in enumerate(eager.items(), len(arrays)):
            table.prepare(row, buf, buf)
            self.eager_rows[n] = (table, row)
        tools.call(table.run, [], {}, identity)
        self.gather = table

    def capture_between(self, tools: Any, block: Any, host: Any, at: int, seg_at: int,
                        eager: dict) -> None:
        """While capturing a later graph (segment *seg_at*): the results of the eager ops
        since the graph before it (*eager*, by slot: their buffers), copied into their
        buffers by its first node, a table at *at* bytes into *block*."""
        table = tools.copy_table(block, host, at, len(eager))
        for row, (n, buf) in enumerate(eager.items()):
            table.prepare(row, buf, buf)
            self.eager_rows[n] = (table, row)
        tools.call(table.run, [], {}, identity)
        self._between[seg_at] = table

    def gather_eager(self, n: int, buf: Any, made: Any) -> bool:
        """At a replay: eager result slot *n*'s new array *made* (the layout of its buffer
        *buf*) copied into *buf* by the next graph's copy table (one ``cudaMemcpyAsync``
        saved: 5-9 µs of an H200 host's worker, benchmarks/worker_calls_probe.py), its row
        committed before that graph's launch (:meth:`commit_eager`); whether it has a row
        (else copy it yourself)."""
        entry = self.eager_rows.get(n)
        if entry is None or not (made.flags.c_contiguous or made.flags.f_contiguous):
            return False
        table, row = entry
        table.set(row, buf, made)
        self._rowed.append((table, buf, made))
        return True

    def forget_rows(self) -> None:
        """A replay begins: rows a replay that failed before its graphs set are not kept
        (their arrays let go; set anew by this one)."""
        self._rowed = []

    def commit_eager(self) -> bool:
        """Before a graph's launch: the rows :meth:`gather_eager` set, into the host block;
        whether any changed (the block is then written: an array's address moved)."""
        rowed, self._rowed = self._rowed, []
        changed = False
        for table in {id(t): t for t, _b, _m in rowed}.values():
            changed = table.commit() or changed
        return changed

    def apart(self, tools: Any) -> None:
        """The rows set and not committed, copied one by one instead: a result's layout
        changed under an eager op, so the graphs that would have copied them do not launch
        (the ops after run eagerly on the buffers)."""
        rowed, self._rowed = self._rowed, []
        for _table, buf, made in rowed:
            tools.copy_any(buf, made)

    def capture_out(self, tools: Any, block: Any, host: Any, at: int, kept: list,
                    env: dict, seg_at: int, array_type: type) -> None:
        """While capturing the last graph (segment *seg_at*): the copies of the *kept*
        results' buffers (in *env*) into the arrays a replay hands out, as its last node. A
        result of another layout than a fresh array's is copied after, as before; at the
        capture itself each row copies a result onto itself (nothing)."""
        slots = [n for n in kept if n in env and plain(env[n], array_type)]
        if not slots:
            return
        table = tools.copy_table(block, host, at, len(slots))
        for row, n in enumerate(slots):
            table.prepare(row, env[n], env[n])
        tools.call(table.run, [], {}, identity)
        self.scatter, self.scatter_seg = table, seg_at
        self.scatter_slots = [(n, env[n], tools.maker(env[n])) for n in slots]

    def refused(self, seg_at: int) -> None:
        """Segment *seg_at* refused capture: the copies it would have held are made apart."""
        if seg_at == self.gather_seg:
            self._drop_rows(self.gather)
            self.gather, self.gather_slots, self.gather_seg = None, [], -1
        if seg_at in self._between:
            self._drop_rows(self._between.pop(seg_at))
        if seg_at == self.scatter_seg:
            self.scatter, self.scatter_slots, self.scatter_seg = None, [], -1

    def _drop_rows(self, table: Any) -> None:
        self.eager_rows = {n: e for n, e in self.eager_rows.items() if e[0] is not table}

    @property
    def any(self) -> bool:
        return self.gather is not None or self.scatter is not None or bool(self._between)

    # ------------------------------------------------------------ replay
    # ------------------------------------------------------------ the next replay, ahead
    def learn(self, used: list, inputs: list, outs: list) -> None:
        """After a replay with these input and result handles: where each *used* input
        came from against the replay before (the same handle again, one of its results: a
        loop-carried array, or another of its inputs: two buffers that take turns, ``u, v =
        v, u`` after a step that reads u and writes v); None where any came from elsewhere."""
        before, self._last_entry = self._last_entry, (inputs, outs)
        if before is None:
            return
        last_inputs, last_outs = before
        rule: dict | None = {}
        for n in used:
            hid = inputs[n]
            if hid == last_inputs[n]:
                rule[n] = (False, n)
            elif hid in last_outs:
                rule[n] = (True, last_outs.index(hid))
            elif hid in last_inputs:
                rule[n] = (False, last_inputs.index(hid))
            else:
                rule = None
                break
        self._next_inputs = rule

    def learn_after(self, used: list, inputs: list, sid: int, before: tuple) -> None:
        """Before :meth:`learn`, a replay of this stretch that came right after a replay of
        stretch *sid* (*before*: its inputs and results): where each *used* input came from,
        its own last replay's handle again or one of the other's; None where any came from
        elsewhere."""
        own = self._last_entry
        other_inputs, other_outs = before
        rule: dict | None = {}
        for n in used:
            hid = inputs[n]
            if own is not None and hid == own[0][n]:
                rule[n] = (0, n)
            elif hid in other_outs:
                rule[n] = (1, other_outs.index(hid))
            elif hid in other_inputs:
                rule[n] = (2, other_inputs.index(hid))
            else:
                rule = None
                break
        self._after_inputs = (sid, rule) if rule is not None else None

    @property
    def last_entry(self) -> tuple | None:
        """The inputs and results of this stretch's last replay learnt from (:meth:`learn`)."""
        return self._last_entry

    def predict_after(self, sid: int, before: tuple) -> dict | None:
        """The handles of this stretch's next replay's used inputs, by slot, where it comes
        right after a replay of stretch *sid* (*before*: its inputs and results), by the rule
        :meth:`learn_after` found after that stretch; None where none was."""
        learnt, own = self._after_inputs, self._last_entry
        if learnt is None or own is None or learnt[0] != sid:
            return None
        where = (own[0], before[1], before[0])
        try:
            return {n: where[kind][m] for n, (kind, m) in learnt[1].items()}
        except IndexError:   # (its results or inputs not as many as then: nothing guessed)
            return None

    def predict(self, arrays: dict) -> dict | None:
        """The next replay's inputs by slot if the rule learnt holds (from the handle
        table's *arrays*), or None (nothing to set up ahead)."""
        if not self.any:
            return None
        handles = self.predict_handles()
        if handles is None:
            return None
        predicted = {}
        for n, hid in handles.items():
            a = arrays.get(hid)
            if a is None:
                return None
            predicted[n] = a
        return predicted

    def predict_handles(self) -> dict | None:
        """The handles of the next replay's used inputs, by slot, if the rule learnt holds
        (a loop-carried result, the same handle again, or another input's: buffers taking
        turns); None where nothing was learnt."""
        rule, last = self._next_inputs, self._last_entry
        if rule is None or last is None:
            return None
        inputs, outs = last
        return {n: outs[m] if carried else inputs[m] for n, (carried, m) in rule.items()}

    def prepare(self, tools: Any, bufs: dict, predicted: dict) -> bool:
        """After a replay's reply, while the client works: set up the next replay as if
        its inputs were *predicted* (by slot: its loop-carried results, the inputs that
        stayed), its kept results' arrays made; whether any row changed. The replay finds
        it done where its inputs are those (:meth:`set_up`); else it is set up again."""
        held = 0   # (loops: no generators after every replay)
        for a in predicted.values():
            held += a.nbytes
        if self.scatter is not None:
            for _n, kept, _m in self.scatter_slots:
                held += kept.nbytes
        if held > PREPARE_MAX_BYTES:
            return False
        self._prepared = None
        ahead, changed = self._rows(tools, bufs, predicted, copy_inputs=False)
        self._prepared = (predicted, ahead)
        return changed

    def set_up(self, tools: Any, bufs: dict, arrays: dict) -> tuple[dict | None, bool]:
        """Before a replay's launch: the rows of its inputs (or their copies, one by one),
        and its kept results' arrays, made now. Returns those arrays by result slot (None:
        no scatter) and whether any row changed (the parameter block is then written). A
        replay whose inputs are the ones :meth:`prepare` predicted finds all that done."""
        self.forget_rows()
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            predicted, ahead = prepared
            if len(predicted) == len(arrays) and _same_arrays(predicted, arrays):
                if self.gather is None:
                    for n, a in arrays.items():
                        tools.copy(bufs[n], a)
                return ahead, False
        return self._rows(tools, bufs, arrays, copy_inputs=True)

    def unprepare(self) -> None:
        """Forget the next replay set up ahead (:meth:`prepare`): rows changed since by
        another's setting (the steady lane's runs ahead) would leave it stale."""
        self._prepared = None

    def drop_prepared(self) -> None:
        """Forget the next replay set up ahead and the arrays made lately (those nobody
        else holds go back to the pool)."""
        self._prepared = None
        self._spares.clear()

    def _made_for(self, tools: Any, n: int, make: Any) -> Any:
        """A fresh array for kept result slot *n*: one made for it before that nobody holds
        any more (its handle freed, no view of it or of its memory left), else a new one
        from *make*. Making one costs a memory pool's allocation (10-25 µs of an H200 host's
        worker in a replay's setup); a loop's results take turns in a few arrays instead.
        Whether anybody else holds it is read from reference counts (CPython's): here one
        reference is the list's, one the name *a*'s, one getrefcount's argument's;
        ``tools.sole_memory`` looks at what shares its memory without referring to it."""
        spares = self._spares.get(n)
        if spares is None:
            spares = self._spares[n] = []
        for i in range(len(spares)):   # (no enumerate: its tuple would hold a reference)
            a = spares[i]
            if getrefcount(a) == 3 and tools.sole_memory(a):
                del spares[i]
                spares.append(a)
                return a
        made = make()
        if made.nbytes <= SPARE_BYTES:
            spares.append(made)
            if len(spares) > SPARES:
                del spares[0]
        return made

    def _rows(self, tools: Any, bufs: dict, arrays: dict, copy_inputs: bool) -> tuple[dict | None, bool]:
        changed = False
        gather = self.gather
        if gather is not None:   # (copied by the first graph: its rows say from where)
            for row, n in enumerate(self.gather_slots):
                gather.set(row, bufs[n], arrays[n])
            changed = gather.commit()
        elif copy_inputs:
            for n, a in arrays.items():
                tools.copy(bufs[n], a)
        scatter = self.scatter
        if scatter is None:
            return None, changed
        ahead = {}
        for row, (n, kept, make) in enumerate(self.scatter_slots):   # (filled by the last graph)
            made = ahead[n] = self._made_for(tools, n, make)
            scatter.set(row, made, kept)
        return ahead, scatter.commit() or changed


def _same_arrays(predicted: dict, arrays: dict) -> bool:
    """Whether every array of *arrays* is the one *predicted* for its slot (a loop, not a
    generator: this runs at every replay)."""
    for n, a in arrays.items():
        if predicted.get(n) is not a:
            return False
    return True


def plain(a: Any, array_type: type) -> bool:
    """Whether *a*'s bytes are those of a fresh array of its layout (tools.empty_like): a
    copy table may copy it byte for byte."""
    if type(a) is not array_type:
        return False
    flags = a.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        return False
    shape = a.shape
    dims = range(len(shape)) if flags.f_contiguous and not flags.c_contiguous \
        else range(len(shape) - 1, -1, -1)
    strides = [0] * len(shape)
    step = a.itemsize
    for d in dims:   # (a fresh array's strides, in its order)
        strides[d] = step
        step *= shape[d]
    return tuple(strides) == a.strides


def identity(value: Any) -> Any:
    """A call's result as it is (what a graph tool's ``call`` does with a result it keeps)."""
    return value
