"""What a batch waits for before its ops run, shown in the notebook while it lasts.

The worker tells a client that reads notices (its batches' header ``p``, set while the
session has a ``progress`` factory) what the oldest batch in flight waits for: its session's
swap-in, or room on a full device (protocol ``WaitNotice``, gpu_backend/worker/wait_notices.py).
Each wait gets a reporter from the session's progress factory (workbench's
NotebookProgress in a notebook: nothing shows for a wait under a second) that follows the
bytes done, and is closed at the notice that ends it, at the batch's reply, or when the
session closes or is lost: a display never outlives its wait.
"""

from __future__ import annotations

from typing import Any, Callable

from gpu_backend.protocol import messages as m

__all__ = ["WAIT_LABELS", "WaitDisplays"]

#: What a batch waits for, as the worker's notices name it, in the words the display shows
WAIT_LABELS = {"swap_in": "swap-in (the session's arrays coming back)",
               "room": "waiting for room on the device (other sessions swapping out)"}


class WaitDisplays:
    """The waits the worker told of that are still open (what -> [reporter, bytes done]);
    *progress* gives the session's progress factory now (None: none is shown)."""

    def __init__(self, progress: Callable[[], Any]) -> None:
        self._progress = progress
        self._open: dict[str, list] = {}

    def __bool__(self) -> bool:
        return bool(self._open)

    def __len__(self) -> int:
        return len(self._open)

    def noticed(self, notice: dict) -> None:
        """A notice (a reply frame with ``notice``): shown, or skipped where its version or
        its wait is not one this client knows (it is never a reply)."""
        what = notice.get("w")
        done, total = notice.get("done"), notice.get("total")
        if (notice.get("notice") != m.WAIT_NOTICE_VERSION or what not in WAIT_LABELS
                or type(done) is not int or type(total) is not int):
            return
        wait = self._open.get(what)
        if wait is None:
            factory = self._progress()
            if factory is None:
                return
            wait = self._open[what] = [factory(WAIT_LABELS[what], total), 0]
        wait[1] = done
        wait[0].update(done)
        if notice.get("end"):
            del self._open[what]
            wait[0].close()

    def refresh(self) -> None:
        """Show again what is open (a display due after its first second shows without
        waiting for the next notice: a wait for room brings no bytes back meanwhile)."""
        for reporter, done in list(self._open.values()):
            reporter.update(done)

    def end(self) -> None:
        """Every wait shown is over (its batch answered, the session closed or lost)."""
        waits, self._open = self._open, {}
        for reporter, _done in waits.values():
            reporter.close()
