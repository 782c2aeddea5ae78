"""Progress of long transfers in a notebook: shown in place, gone when done.

A session calls its ``progress`` factory for each streamed upload or download (the
large ones: those sent in chunks) with a label and the size, then ``update`` with the
bytes moved after each chunk and ``close`` at the end. :class:`NotebookProgress` stays
silent for the first :data:`SHOW_AFTER` seconds (most transfers end before), then shows
a bar through a display with an id, updated in place (Jupyter's ``update_display_data``)
at most every :data:`REFRESH` seconds, and blanks it when the transfer ends, so the
cell's output keeps only what the user printed.
"""

from __future__ import annotations

import time
from typing import Any, Callable

__all__ = ["NotebookProgress", "SHOW_AFTER", "REFRESH"]

#: seconds a transfer runs before its progress is shown (the kernel's settings,
#: ``GPUWB_PROGRESS_AFTER``, override it: workbench.connection.ClientSettings)
SHOW_AFTER = 1.0
#: seconds between two updates of the display
REFRESH = 0.25


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


class NotebookProgress:
    """One transfer's progress display (made by a session as ``progress(label, total)``)."""

    def __init__(self, label: str, total: int, *, show_after: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total = label, max(int(total), 1)
        self.show_after = SHOW_AFTER if show_after is None else show_after
        self._clock = clock
        self.started = clock()
        self._shown_at = -1.0
        self._handle: Any = None
        self.updates = 0

    def update(self, done: int) -> None:
        now = self._clock()
        elapsed = now - self.started
        if elapsed < self.show_after or (now - self._shown_at < REFRESH and done < self.total):
            return
        self._shown_at = now
        self._show(self._bundle(done, elapsed))

    def close(self) -> None:
        """The transfer ended: the display (if one was shown) is blanked."""
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)
            self._handle = None

    def _bundle(self, done: int, elapsed: float) -> dict:
        fraction = min(done / self.total, 1.0)
        rate = done / elapsed if elapsed > 0 else 0.0
        text = (f"{self.label}: {_size(done)} of {_size(self.total)} ({fraction:.0%})"
                + (f", {_size(rate)}/s" if done else ""))   # (a wait with none back yet)
        width = f"{fraction * 100:.1f}%"
        html = (f'<div style="font-family:monospace">{text}'
                f'<div style="background:#ddd;width:20em;height:0.6em">'
                f'<div style="background:#4a90d9;width:{width};height:100%"></div></div></div>')
        return {"text/plain": text, "text/html": html}

    def _show(self, bundle: dict) -> None:
        from IPython.display import display
        self.updates += 1
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)
