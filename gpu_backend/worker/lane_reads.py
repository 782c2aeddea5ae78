"""The steady lane's closing scalar reads by one launch (issue 50, docs/stretch-replay.md,
"The steady lane").

A loop that reads a value every iteration (``float((x + 1).sum())``, a loss, a norm) ends
each replay with reads of 0-d results of its graphs. Each was a call of the device's
conversion (``float``), which on a GPU copies the value by a ``cudaMemcpyAsync`` of its own
and waits: ~15 µs of an H200 host's worker at every message of the hot sync (run 226's
``lane_read``), where the graph's launch costs 2.5. So a plan whose closing reads are all
such conversions of its graphs' 0-d numeric buffers gets a *read graph*: one launch after
its graphs copies every value into a page-locked slot of its own (the device's
``read_slots``), and the reads are then the wait for the stream and each conversion of its
slot, a NumPy 0-d array of the buffer's dtype — what the device's conversion converts
(devices/cupy_scalar_reads.py; the NumPy device's builtin of its own 0-d array), so the
values, and any error or warning they raise, are the same by construction (the tests check
the values and an error; NumPy 2's conversions of a 0-d numeric array raise no warning).
A read graph the device could not make is said once on the worker's stderr, and the reads
are made as before. Any other read (a slice, an ``item``, a
read taking a parameter) leaves the plan's reads as they were.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from ..devices.cupy_scalar_reads import CONVERSIONS, MOST_BYTES
from ..protocol.messages import KIND_OPERATOR

__all__ = ["ReadSlots", "read_slots"]


class ReadSlots:
    """A plan's read graph (*graph*, launched after its graphs), its reads: (the op's index,
    the conversion, the slot its value is copied into), and what holds the slots' memory
    (*keep*: the device's, given back once nothing holds it)."""

    __slots__ = ("graph", "reads", "keep")

    def __init__(self, graph: Any, reads: list, keep: Any) -> None:
        self.graph, self.reads, self.keep = graph, reads, keep


def read_slots(tools: Any, reads: list, array_type: type) -> ReadSlots | None:
    """The read graph of a plan's closing *reads* (``(index, kind, name, target, args,
    kwargs)`` with their arguments resolved: the graphs' own buffers), made by the device's
    graph *tools*; None where one of them is not a conversion of a 0-d numeric array of
    *array_type*, or the device could not make it (the reads are then made as before). The
    conversions and the widest value are the device's own scalar reads'
    (devices/cupy_scalar_reads.py)."""
    if not reads:
        return None
    arrays, converts = [], []
    for index, kind, name, target, args, kwargs in reads:
        convert = CONVERSIONS.get(name) if kind == KIND_OPERATOR and type(name) is str else None
        if convert is None or target is not None or kwargs or len(args) != 1:
            return None
        a = args[0]
        if type(a) is not array_type or a.ndim or a.dtype.kind not in "biufc" \
                or a.dtype.itemsize > MOST_BYTES:
            return None
        arrays.append(a)
        converts.append((index, convert))
    global _told
    try:
        graph, views, keep = tools.read_slots(arrays)
    except Exception:   # (a device that cannot capture the copies: the reads as before,
        if not _told:   # said once: run 227's GPU never made one, and nothing said so)
            _told = True
            traceback.print_exc(file=sys.stderr)
        return None
    return ReadSlots(graph, [(index, convert, view) for (index, convert), view in zip(converts, views)],
                     keep)


#: whether a read graph's failure was said (once a worker)
_told = False
