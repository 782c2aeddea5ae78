"""The worker's dealings with its pool over the device its session shares (mixed into
:class:`~gpu_backend.worker.server.WorkerServer`): memory granted within the user's quota
(``grow``), handed back when idle or asked (``grant``), room asked when the device itself is
full (``room``: the pool swaps idle sessions out), the session swapped out when the pool says
(``swap``), and the NumPy device's memory board and turns, which make one host's NumPy device
shared as a GPU is.

It uses the server's control channel (``_send_control``, ``_read_control``, ``_on_control``,
``control``), its ``device``, ``executor``, ``swap``, ``notices`` and ``run_dir``, and its
``_report_usage``; the serving loop (server.py) calls :meth:`DeviceSharing._swap_out` and
:meth:`DeviceSharing._hand_back_memory` between messages.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from ..protocol.errors import error_name
from . import staged
from .grants import MIN_STEP

__all__ = ["DeviceSharing", "GROW_TIMEOUT", "ROOM_TIMEOUT"]

#: A request for memory that the pool does not answer in this long is refused.
GROW_TIMEOUT = 10.0
#: how long an allocation waits for the pool to swap other sessions out (worker/swap.py)
ROOM_TIMEOUT = 60.0


class DeviceSharing:
    """The session's device memory (and the NumPy device's turns) as its pool deals them
    (the module's doc)."""

    def _ask_memory(self, want: int) -> tuple[int, str | None]:
        """Ask the pool to grant *want* bytes in all (an allocation needs them); returns the
        bytes granted and, if short, why. Other control messages met meanwhile are kept."""
        self._send_control({"t": "grow", "want": want})
        deadline = time.monotonic() + GROW_TIMEOUT
        while not self.pool_gone and self.control.poll(max(0.0, deadline - time.monotonic())):
            msg = self._read_control()
            if msg is not None and msg.get("t") == "granted":
                return int(msg.get("bytes") or 0), msg.get("why")
            if msg is not None and msg.get("t") == "reclaim":   # (mid-allocation: nothing to give)
                self._send_control({"t": "grant", "bytes": self.device.grant.granted})
            elif msg is not None:
                self._on_control(msg)
            if time.monotonic() > deadline:
                break
        if self.pool_gone:
            return self.device.grant.granted, "the pool has gone"
        return self.device.grant.granted, "the pool did not answer a request for memory"

    def _ask_room(self, short: int) -> bool:
        """This device's memory is full: ask the pool to swap idle sessions of it out to
        make *short* bytes of room; whether it made some. Other control messages met
        meanwhile are kept (a swap asked of this worker waits for its loop)."""
        self._send_control({"t": "room", "want": max(0, int(short))})
        self.notices.start("room", short)   # (the client sees why its op waits)
        try:
            made = self._wait_roomed()
            self.room_refused = self.room_refused or not made
            return made
        finally:
            self.notices.end("room")

    def _wait_roomed(self) -> bool:
        """The pool's ``roomed`` (within ROOM_TIMEOUT): whether it made room."""
        deadline = time.monotonic() + ROOM_TIMEOUT
        while not self.pool_gone and self.control.poll(max(0.0, deadline - time.monotonic())):
            msg = self._read_control()
            if msg is not None and msg.get("t") == "roomed":
                freed = int(msg.get("freed") or 0)
                self.notices.progress("room", freed)
                return freed > 0
            if msg is not None and msg.get("t") == "reclaim":   # (mid-allocation: nothing to give)
                self._send_control({"t": "grant", "bytes": self.device.grant.granted
                                    if self.device.grant is not None else None})
            elif msg is not None:
                self._on_control(msg)
            if time.monotonic() > deadline:
                break
        return False

    def _room_for(self, exc: BaseException) -> bool:
        """An op ran out of device memory on a GPU (not past its quota or limit): room asked
        of the pool, for the bytes the error names; whether the op may run again."""
        text = str(exc)
        if error_name(exc) != "OutOfMemoryError" or "quota" in text:
            return False
        # CuPy: "Out of memory allocating S bytes (allocated so far: T bytes[, limit set to:
        # L bytes])." - past the session's limit when T + S > L, else the device is full
        found = re.search(r"allocating ([\d,]+) bytes \(allocated so far: ([\d,]+) bytes"
                          r"(?:, limit set to: ([\d,]+) bytes)?", text)
        if found is None:
            return False
        size, total = (int(found[i].replace(",", "")) for i in (1, 2))
        if found[3] is not None and total + size > int(found[3].replace(",", "")):
            return False
        return self._ask_room(size)

    def _hand_back_memory(self, asked: bool = False) -> None:
        """Idle: return memory the session no longer uses to its user's quota. *asked*: the
        pool asks for it (another session of the user wants to open): keep only what is in
        use and a megabyte, and answer even when nothing changed."""
        grant = self.device.grant
        if grant is None:
            if asked:
                self._send_control({"t": "grant", "bytes": None})
            return
        kept = grant.shrink(self.device.memory_used(), MIN_STEP if asked else None)
        if kept is not None or asked:
            self._send_control({"t": "grant", "bytes": grant.granted})

    def _swap_out(self) -> None:
        """Swap the session's arrays out (idle, or asked), hand their memory back, give its
        clients' staging rings' page-locked memory back, and tell the pool; a failure (disk
        full) loses nothing: the arrays stay and the pool is told.
        A session asked out for another's memory that has worked since the pool judged it
        idle stays, and says so (``busy``: the seconds since its last batch)."""
        busy = self.swap.busy_since_asked()
        if busy is not None:
            self.swap.host_room = 0
            self._send_control({"t": "swapped", "bytes": 0, "seconds": 0.0,
                                "busy": round(busy, 4)})
            return
        # (a message committed ahead whose step wrote inputs is undone first: the values a
        # roll-back would copy back stay on the device, the arrays they go to would move;
        # served quietly if it comes: worker/pushed_replies.py)
        pushes = self.lane.pushes
        if any(r.saved for r in pushes.sent):
            pushes.roll_back(self.lane, False)
        try:
            swapped = self.swap.out()
        except Exception as exc:
            self._send_control({"t": "swapped", "bytes": 0, "error": f"{error_name(exc)}: {exc}"})
            return
        self._hand_back_memory()
        staged.unpin_rings(self.links)   # (its clients' staging rings: pinned again when used)
        # (the report first: when the pool hears ``swapped`` its figures, where the bytes
        # are, already count, so its host budget is never short of them, door/swap_broker)
        self._last_usage_time = 0.0
        self._report_usage()
        self._send_control({"t": "swapped", "bytes": swapped.nbytes if swapped else 0,
                            "host": swapped.host_bytes if swapped else 0,
                            "seconds": round(swapped.seconds, 6) if swapped else 0.0})

    def _share_device_memory(self, capacity: Any) -> None:
        """Make room in the device's memory by swapping others out when it is full: a GPU's
        own (an op out of memory asks, then runs again), or the NumPy device's as the pool
        sets it (*capacity* bytes, shared through its board in the run directory)."""
        if not hasattr(self.device, "board"):   # a GPU: an op that ran out asks, then runs again
            self.executor.make_room = self.swap.room = self._room_for
        elif type(capacity) is int and capacity > 0 and self.run_dir:
            from ..devices.host_memory_board import MemoryBoard
            self.device.board = MemoryBoard(
                os.path.join(self.run_dir, f"memory-{self.device_spec}.board"), capacity)
            self.device.make_room = self._ask_room

    def _share_device_compute(self, turns: Any) -> None:
        """The NumPy device's ops run in turns with its other sessions' workers, as one
        GPU's do, where the pool says so (its ``numpy_device_turns``): host_turns."""
        take_turns = getattr(self.device, "take_turns", None)   # (the NumPy device's)
        if turns is True and self.run_dir and take_turns is not None and self.device.turns is None:
            from ..devices.host_turns import DeviceTurns
            take_turns(DeviceTurns(os.path.join(self.run_dir, f"turns-{self.device_spec}.lock")))
