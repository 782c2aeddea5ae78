"""What one batch's ops give its reply, gathered in one place while they run.

The executor makes one :class:`BatchResults` per batch (``Executor.run_batch``) and every
path that runs ops — the op loop, a held stretch's replay through its graphs or from its
records — adds to that one object, so the reply is built from one place however the ops ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .result_meta import add_metas

__all__ = ["BatchResults"]


@dataclass(slots=True)
class BatchResults:
    """One batch's results, in the reply's terms."""

    #: metadata entries of arrays made by the shared path (worker/result_meta.py), sent in
    #: the reply's ``m``
    metas: list = field(default_factory=list)
    #: arrays made by the inline path and by graph replay, by handle: their metadata is taken
    #: at the batch's end, and only for those the client still holds then (:meth:`finish`)
    fresh: dict = field(default_factory=dict)
    #: ``[seq, value]`` of each op whose result goes back by value (the reply's ``v``)
    values: list = field(default_factory=list)
    #: ``[seq, dtype, shape, ...]`` of each download (the reply's ``d``)
    downloads: list = field(default_factory=list)
    #: the downloads' data, the frames sent after the reply
    out_frames: list = field(default_factory=list)

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
        """Drop the values added since *mark*: a held stretch whose graphs gave up part-way
        is re-run from its records, which give those values again."""
        del self.values[mark:]

    def finish(self, arrays: dict) -> None:
        """The metadata of the fresh arrays the handle table (*arrays*) still holds."""
        if self.fresh:
            add_metas(self.metas, self.fresh, arrays)
