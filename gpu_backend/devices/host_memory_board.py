"""The NumPy device's memory as one device has it: shared by all its sessions' workers.

A GPU has so many bytes, whoever allocates them; the NumPy device is host memory, which each
worker would otherwise take without bound but its own session's limit. With the pool's
``numpy_device_memory`` set, each NumPy device has this *board*: a file in its host's run
directory (``memory-cpu:K.board``, made by the first worker that opens it) with one 8-byte
slot per worker, each worker writing only its own slot (what its
session holds) and reading the sum of the others' before it allocates. So a full NumPy
device refuses an allocation as a full GPU does, and the pool's swapping (worker/swap.py,
"pressure") can be tested without a GPU.

A slot is claimed with a POSIX record lock on its bytes (as the spin slots are), zeroed when
claimed and when its worker ends; a killed worker's figure stays counted until its slot is
claimed again (the board is an emulation for tests and demos, not an accounting).
"""

from __future__ import annotations

import mmap
import os

import numpy as np

try:
    import fcntl
except ImportError:   # not a POSIX system: no board
    fcntl = None

__all__ = ["MemoryBoard", "SLOTS"]

#: workers of one device that can hold a slot at once (more: those allocate unbounded)
SLOTS = 1024


class MemoryBoard:
    """One worker's view of its device's board: its slot, the others' sum, the capacity."""

    def __init__(self, path: str, capacity: int) -> None:
        if fcntl is None:
            raise OSError("the NumPy device's memory board needs POSIX record locks")
        self.capacity = int(capacity)
        # (the device's first worker makes it; each extends it to its size, which is harmless
        # when done twice: the new bytes are zeros)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self._fd).st_size < 8 * SLOTS:
            os.ftruncate(self._fd, 8 * SLOTS)
        self._map = mmap.mmap(self._fd, 8 * SLOTS)
        self.slots = np.frombuffer(self._map, np.int64, SLOTS)
        self.slot = self._claim()

    def _claim(self) -> int:
        for slot in range(SLOTS):
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 8, 8 * slot)
            except OSError:
                continue
            self.slots[slot] = 0
            return slot
        raise OSError(f"the NumPy device's memory board has no free slot of {SLOTS}")

    def others(self) -> int:
        """Bytes the device's other sessions hold now."""
        return int(self.slots.sum()) - int(self.slots[self.slot])

    def fits(self, total: int) -> bool:
        """Whether this session may hold *total* bytes beside the others."""
        return self.others() + total <= self.capacity

    def set_used(self, nbytes: int) -> None:
        self.slots[self.slot] = nbytes

    def close(self) -> None:
        fd, self._fd = self._fd, -1   # (a second call closes nothing: see StagingRing.close)
        if fd < 0:
            return
        try:
            self.slots[self.slot] = 0
            self.slots = None
            self._map.close()   # (BufferError while a view of it lives: the map goes with it)
        finally:
            os.close(fd)   # (and with it the slot's lock)
