"""The NumPy device's compute taken in turns by its sessions' workers, as one GPU's is.

A GPU runs the work of all its sessions on one set of cores: sessions side by side slow each
other down, and only a policy that holds some back can split the device by weight. The
NumPy device's workers are processes that each compute on the host's own cores, so on a host
with cores to spare they never contend, and a test of how a policy splits a busy device has
nothing to split. With the pool's ``numpy_device_turns`` set, each NumPy device has these
*turns*: its workers run their ops one at a time, each op a turn, handed round the workers
that wait, as a GPU time-slices its contexts. (An emulation for tests and demos, as the
memory board is: nothing a user's results depend on.)

The turn is a POSIX record lock on the first bytes of a file in the host's run directory
(``turns-cpu:K.lock``). Such a lock is not handed over in order: a worker that lets it go and
asks again at once would get it again before a waiting worker woke, so one session would have
the device while the others wait. So each worker has a slot in the file that says it waits
(written only by that worker, claimed with a record lock on its bytes as the memory board's
slots are), the holder counts the turns taken, and a worker that lets the lock go while
another waits asks again only once another has taken its turn. A worker killed while it
waited leaves its slot saying so: after ``HANDOVER_WAIT`` the worker that let the turn go
looks, and clears the slots whose lock nobody holds.
"""

from __future__ import annotations

import mmap
import os
import time
from typing import Any, Callable

import numpy as np

try:
    import fcntl
except ImportError:   # not a POSIX system: no turns
    fcntl = None

__all__ = ["DeviceTurns", "InTurn", "SLOTS"]

#: workers of one device that can wait for turns at once (more: those take turns unannounced)
SLOTS = 256
#: seconds a worker that let the turn go waits for a waiting worker to take it before it
#: looks for slots of killed workers (a loaded host may wake the waiting one late)
HANDOVER_WAIT = 0.02
#: seconds between two looks at the turns taken meanwhile: a nap, not a spin, which would be
#: CPU time, the NumPy device's measure of the op that let the turn go
HANDOVER_NAP = 0.00005


class DeviceTurns:
    """One worker's part in its device's turns: ``with turns:`` around each op it runs."""

    def __init__(self, path: str) -> None:
        if fcntl is None:
            raise OSError("the NumPy device's turns need POSIX record locks")
        # bytes 0-7: the turns taken (written by the holder only); slot i at 8 * (i + 1):
        # 1 while its worker waits for a turn
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self._fd).st_size < 8 * (SLOTS + 1):
            os.ftruncate(self._fd, 8 * (SLOTS + 1))
        self._map = mmap.mmap(self._fd, 8 * (SLOTS + 1))
        self._words = np.frombuffer(self._map, np.int64, SLOTS + 1)
        self._waiting = self._words[1:]
        self.slot = self._claim()
        self.taken = 0   # turns this worker took
        self._depth = 0  # (an op inside a turn, a graph's recorded call: the same turn)

    def _claim(self) -> int | None:
        for slot in range(SLOTS):
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 8, 8 * (slot + 1))
            except OSError:
                continue
            self._waiting[slot] = 0
            return slot
        return None

    def __enter__(self) -> "DeviceTurns":
        self._depth += 1
        if self._depth > 1:
            return self
        slot = self.slot
        if slot is not None:
            self._waiting[slot] = 1
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX, 8, 0)
        except BaseException:   # (interrupted while waiting: no turn taken)
            self._depth -= 1
            raise
        finally:
            if slot is not None:
                self._waiting[slot] = 0
        self._words[0] += 1
        self.taken += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        if self._depth:
            return
        turn = int(self._words[0])
        fcntl.lockf(self._fd, fcntl.LOCK_UN, 8, 0)
        if not self._waiting.any():
            return
        deadline = time.monotonic() + HANDOVER_WAIT
        while self._words[0] == turn:
            if time.monotonic() >= deadline:
                if not self._clear_dead():
                    return
                deadline = time.monotonic() + HANDOVER_WAIT
            time.sleep(HANDOVER_NAP)   # (the waiting worker wakes and takes the lock)

    def _clear_dead(self) -> bool:
        """Clear the waiting slots whose worker is gone (their record lock is free); whether
        a live worker still waits."""
        alive = False
        for slot in np.flatnonzero(self._waiting).tolist():
            if slot == self.slot:
                continue
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 8, 8 * (slot + 1))
            except OSError:   # held: its worker lives (and waits, or is about to)
                alive = True
                continue
            self._waiting[slot] = 0
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 8, 8 * (slot + 1))
        return alive

    def wrap(self, fn: Callable) -> "InTurn":
        """*fn* run as one turn."""
        return InTurn(fn, self)

    def close(self) -> None:
        fd, self._fd = self._fd, -1   # (a second call closes nothing: see StagingRing.close)
        if fd < 0:
            return
        try:
            if self.slot is not None:
                self._waiting[self.slot] = 0
            self._waiting = self._words = None
            self._map.close()   # (BufferError while a view of it lives: the map goes with it)
        finally:
            os.close(fd)   # (its record locks go with it)


class InTurn:
    """A device function that runs as one of the device's turns; anything else asked of it
    (a ufunc's ``types``, a lazily imported function's ``resolved``) is the function's."""

    __slots__ = ("fn", "turns")

    def __init__(self, fn: Callable, turns: DeviceTurns) -> None:
        self.fn, self.turns = fn, turns

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.turns:
            return self.fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)
