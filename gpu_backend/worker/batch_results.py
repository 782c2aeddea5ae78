"""What one batch's ops give its reply, gathered in one place while they run.

The executor makes one :class:`BatchResults` per batch (``Executor.run_batch``) and every
path that runs ops — the op loop, a held stretch's replay through its graph or from its
records — adds to that one object, so the reply is built from one place however the ops
ran. Storing a result as the client asked (:meth:`BatchResults.store`) puts its arrays in
the session's handle table and their metadata here.
"""

from __future__ import annotations

from typing import Any

from ..protocol import api, codec
from ..protocol.errors import ProtocolError
from .handles import HandleTable
from .result_meta import add_metas, array_meta, is_bunch

__all__ = ["BatchResults", "several_arrays"]

_PYTHON_SCALARS = frozenset((int, float, bool, complex))


def several_arrays(device: Any, result: Any, count: int) -> list:
    """The *count* arrays of a call of several results (``api.ARRAYS``) as *device* holds
    them; TypeError, the op's error, where *result* is not a tuple or list of exactly so
    many arrays (the client's prediction and the pool disagree). Its ops and a held
    stretch's eager runs of them (worker/graph_replay.py) check the same way."""
    if not isinstance(result, (tuple, list)) or len(result) != count:
        got = (f"{len(result)} results" if isinstance(result, (tuple, list))
               else type(result).__name__)
        raise TypeError(f"expected {count} arrays, got {got}")
    arrays = [device.as_array(item) for item in result]
    for array in arrays:
        if not device.is_array(array):
            raise TypeError(f"expected {count} arrays, got a {type(array).__name__} among them")
    return arrays


class BatchResults:
    """One batch's results, in the reply's terms, and the session's *table* they go to."""

    __slots__ = ("table", "metas", "fresh", "values", "downloads", "out_frames")

    def __init__(self, table: HandleTable) -> None:
        self.table = table
        #: metadata entries of arrays stored at once (worker/result_meta.py), the reply's ``m``
        self.metas: list = []
        #: arrays made by the op loop's inline path and by graph replay, by handle: their
        #: metadata is taken at the batch's end, and only for those the client still holds
        #: then (:meth:`finish`)
        self.fresh: dict = {}
        #: ``[seq, value]`` of each op whose result goes back by value (the reply's ``v``)
        self.values: list = []
        #: ``[seq, dtype, shape, ...]`` of each download (the reply's ``d``)
        self.downloads: list = []
        #: the downloads' data, the frames sent after the reply
        self.out_frames: list = []

    def value(self, seq: Any, value: Any) -> None:
        """Op *seq*'s result goes back by value."""
        self.values.append([seq, value])

    def fresh_array(self, hid: int, array: Any) -> None:
        """*array*, just stored under handle *hid*: its metadata is due at the batch's end."""
        self.fresh[hid] = array

    def values_mark(self) -> int:
        """Where the values stand now, for :meth:`forget_values_since`."""
        return len(self.values)

    def forget_values_since(self, mark: int) -> None:
        """Drop the values added since *mark*: a held stretch whose graph gave up part-way
        is re-run from its records, which give those values again."""
        del self.values[mark:]

    def finish(self) -> None:
        """The metadata of the fresh arrays the handle table still holds."""
        if self.fresh:
            add_metas(self.metas, self.fresh, self.table.arrays)

    # ------------------------------------------------------------ storing a result
    def store(self, seq: Any, want: Any, out: Any, result: Any) -> None:
        """Op *seq*'s result kept as the client asked (*want*): an array under handle *out*
        (its metadata at once), a value, a structure of arrays and values, an object."""
        table = self.table
        if want == api.ARRAY:
            device = table.device
            array = device.as_array(result)
            if not device.is_array(array):
                raise TypeError(f"expected an array result, got {type(result).__name__}")
            table.put(out, array)
            self.metas.append(array_meta(out, array))
        elif want == api.NONE:
            pass
        elif want == api.VALUE:
            self.value(seq, result)
        elif want == api.MULTI:
            self.value(seq, self._structure(out, result))
        elif want == api.ARRAYS:
            self._store_arrays(out, result)
        elif want == api.OBJECT:   # lti.to_ss(), ss * ss: checked by run_object_call
            if result is NotImplemented:   # an operator's: the client tries the reflected one
                self.value(seq, None)
                return
            table.put_object(out, result)
            self.value(seq, type(result).__name__)
        else:
            raise ProtocolError(f"unknown result kind {want!r}")

    def _store_arrays(self, out: Any, result: Any) -> None:
        """A call whose structure the client predicted (``api.ARRAYS``): *result* must be a
        tuple or list of exactly one array per handle in *out*, each stored under its
        handle, their metadata at the batch's end (as the inline path's). Anything else is
        the op's error, nothing stored: the client's prediction and the pool disagree."""
        if type(out) is not list or not out or len(set(out)) != len(out) or any(
                type(hid) is not int or hid <= 0 for hid in out):
            raise ProtocolError(f"bad result handles {out!r}: a list of distinct positive integers")
        arrays = several_arrays(self.table.device, result, len(out))
        put, fresh = self.table.put, self.fresh
        for hid, array in zip(out, arrays):
            put(hid, array)
            fresh[hid] = array

    def _structure(self, out: Any, result: Any) -> Any:
        """Store the arrays inside a structured result; return it with handles."""
        if type(result) is codec.Handle:   # an array the session already holds (ndarray.base)
            return result
        if type(result) in _PYTHON_SCALARS:   # ndimage.label's count: a value, as in CuPy
            return result
        table = self.table
        array = table.device.as_array(result)
        if table.device.is_array(array):
            if type(out) is int and out > 0:
                table.put(out, array)
                hid = out
            else:
                hid = table.put_new(array)
            self.metas.append(array_meta(hid, array))
            return codec.Handle(hid)
        if isinstance(result, (tuple, list)):
            items = [self._structure(None, item) for item in result]
            return tuple(items) if isinstance(result, tuple) else items
        if is_bunch(result):   # place_poles' result: its fields, as a map
            result = vars(result)
        if isinstance(result, dict):   # find_peaks' properties, value_indices, ...
            return {key: self._structure(None, item) for key, item in result.items()}
        return result
