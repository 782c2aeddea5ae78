"""The hand-over's baton: which grant's work has finished on the device, and which holder
is preempted, in shared memory.

A holder handing the device over must let its launched kernels finish before the
next session's start, or CUDA time-slices the two contexts and each one's
markers measure part of the other's work. Waiting for that drain *and then*
sending the release through the arbiter and the grant back would leave the GPU
idle for two messages at every hand-over. Instead the holder releases as soon
as it stops launching; the arbiter grants the next session at once, naming the
grant whose work it must wait for; and the old holder, once its last marker is
reached, writes that grant's number into its slot of a small file mapped by
every worker of the pool (the pool and its workers share one host). The new
holder spins on the slot, and launches microseconds after the device drained.

A holder that dies before writing, or that is inside one long kernel, would
hold the next one up: a waiter gives up after ``BATON_TIMEOUT`` and launches
anyway (the two contexts then share the GPU by CUDA's time-slicing).

The same file carries the other direction of a preemption: the arbiter writes the
number of the grant it preempts into the holder's *yield word* before it sends the
``yield`` message, and the holder reads that word wherever it would look for the
message. A ZeroMQ message wakes two I/O threads on its way; on an H100 host a
preempted holder read its yield 0.27 ms after the decision (median), while a newcomer
waited; a word in shared memory is read the moment the holder looks.
"""

from __future__ import annotations

import mmap
import os
import time

__all__ = ["BatonBoard", "Baton", "SLOTS", "BATON_TIMEOUT"]

#: Workers a board has slots for (a slot is a worker's while it serves a session).
SLOTS = 1024
#: The longest a new holder waits for the old one's work to drain (seconds).
BATON_TIMEOUT = 0.05
_WORD = 8


class BatonBoard:
    """The pool's side: the file and who has which slot. Called from the arbiter thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "wb") as f:
            f.write(bytes(2 * SLOTS * _WORD))
        self._free = list(range(SLOTS - 1, -1, -1))
        self._baton = Baton(path)

    def take(self) -> int | None:
        """A slot for a worker that starts serving a session (None if all are taken)."""
        if not self._free:
            return None
        slot = self._free.pop()
        self._baton.finished(slot, 0)
        self._baton.preempt(slot, 0)
        return slot

    def preempt(self, slot: int, grant: int) -> None:
        """Tell the worker with *slot* to stop launching under *grant* (before the message)."""
        self._baton.preempt(slot, grant)

    def give_back(self, slot: int) -> None:
        self._free.append(slot)

    def close(self) -> None:
        self._baton.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class Baton:
    """A worker's side: write its own slot, spin on another's."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, 2 * SLOTS * _WORD)
        finally:
            os.close(fd)
        self._words = memoryview(self._map).cast("Q")

    def finished(self, slot: int, grant: int) -> None:
        """The work of *grant* (held by the worker with *slot*) is done on the device."""
        if 0 <= slot < SLOTS:
            self._words[slot] = grant

    def preempt(self, slot: int, grant: int) -> None:
        """The arbiter's side: the holder with *slot* is preempted under *grant*."""
        if 0 <= slot < SLOTS:
            self._words[SLOTS + slot] = grant

    def preempted(self, slot: int, grant: int) -> bool:
        """The holder's side: whether its *grant* was preempted (one read of shared memory)."""
        return 0 <= slot < SLOTS and self._words[SLOTS + slot] >= grant

    def wait(self, slot: int, grant: int, timeout: float = BATON_TIMEOUT) -> bool:
        """Spin until the worker with *slot* has finished *grant*'s work; False on timeout."""
        if not 0 <= slot < SLOTS:
            return False
        words = self._words
        if words[slot] >= grant:
            return True
        give_up = time.perf_counter() + timeout
        while words[slot] < grant:
            if time.perf_counter() > give_up:
                return False
        return True

    def close(self) -> None:
        self._words.release()
        self._map.close()
