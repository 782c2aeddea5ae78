"""The pool's spin slots: how many session workers may stay awake between messages.

A sync after a pause pays for waking the worker: a thread blocked in ``poll`` takes tens of
microseconds to run again on bare metal and hundreds on a cloud microVM, where the vCPU
itself went to sleep (``docs/performance-log.md``, runs 46 and 48–49). A worker that keeps
polling for a while after each message (a *long spin*) is awake when the next sync of a
loop or of a person's next line comes, but it costs a core for as long as it spins. So the
pool hands out a fixed number of *spin slots*, fewer than its host's cores, and only a
worker holding one spins long; the others spin the short window and then sleep.

A slot is one byte of a lock file that the pool makes, held with a POSIX record lock
(``fcntl.lockf``). The kernel releases a dead worker's locks, so a killed worker never
keeps a slot; claiming a free slot or giving one back is one system call, made only when a
worker starts or stops its long spin, never per message.
"""

from __future__ import annotations

import os
import tempfile

try:
    import fcntl
except ImportError:   # not a POSIX system: no slots, every worker keeps the short spin
    fcntl = None

__all__ = ["SpinSlots", "default_slot_count", "make_slot_file"]


def default_slot_count() -> int:
    """Half of the cores this process may use once two are set aside (the pool's own and
    the clients' side): 16 cores give 7 slots, 4 give 1, 2 give none (a small host needs
    its CPUs for the work itself, as the short spin's own rule says)."""
    if fcntl is None:
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, (cores - 2) // 2)


def make_slot_file(count: int, directory: str | None = None) -> str:
    """A new lock file with *count* slots (one byte each); the pool removes it at stop."""
    fd, path = tempfile.mkstemp(prefix="gpuwb-spin-", suffix=".lock", dir=directory)
    try:
        os.write(fd, b"\0" * max(count, 1))
    finally:
        os.close(fd)
    return path


class SpinSlots:
    """One worker's view of the pool's slots: ``claim`` one, ``release`` it, ``held``.

    Record locks belong to the process, and closing *any* descriptor of the file drops
    them all, so each worker opens the file once, here, and keeps it open.
    """

    def __init__(self, path: str, count: int) -> None:
        if fcntl is None:
            raise OSError("this system has no POSIX record locks")
        self.count = count
        self._fd = os.open(path, os.O_RDWR)
        #: the slot this worker holds, or None
        self.slot: int | None = None
        # start the search at a different slot in each worker: fewer failed tries
        self._first = os.getpid() % count if count > 0 else 0

    @property
    def held(self) -> bool:
        return self.slot is not None

    def claim(self) -> bool:
        """Take a free slot (never waits); True if this worker holds one now."""
        if self.slot is not None:
            return True
        for i in range(self.count):
            slot = (self._first + i) % self.count
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot, os.SEEK_SET)
            except OSError:   # held by another worker
                continue
            self.slot = slot
            return True
        return False

    def release(self) -> None:
        """Give the slot back (before the worker sleeps)."""
        if self.slot is None:
            return
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, self.slot, os.SEEK_SET)
        finally:
            self.slot = None

    def close(self) -> None:
        """Give the slot back with the file (a second call does nothing: see StagingRing.close)."""
        self.slot = None
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)   # drops this process's locks on the file
