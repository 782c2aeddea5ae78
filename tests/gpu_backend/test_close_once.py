"""Objects that own a raw file descriptor close it once, however often they are closed.

A descriptor's number is free as soon as it is closed, and the next descriptor any thread
makes gets the lowest free number: a pipe, a socket, or libzmq's own eventfd or epoll
descriptor. A second ``os.close`` of the old number then closes that one instead. The
suite's staging-ring fixture closed each ring twice (once itself, once through the
listener); about one full run in ten, a test process then died in a libzmq I/O thread
("Fatal Python error: Aborted"). Each check here closes an object, hands its old number to
a pipe (``os.dup2``: what another thread's next descriptor would be), closes the object
again, and checks that the pipe still works.

The checks run in a process of their own, with no other thread: in the suite's test
processes, embedded pools' threads make descriptors all the time, and a number found free
here may be a pool's new socket by the time ``dup2`` lands on it. This file's first version
did that in the test process, and ``dup2`` replaced a pool's worker channel (its worker
then took the pool for gone) or its listening socket about one run in five (found by an
``LD_PRELOAD`` shim that reported a close of libzmq's eventfd through the channel's socket
object: docs/architecture.md, "Contexts and descriptors")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_backend.protocol import staging
from tests.paths import PROJECT_ROOT

#: the check, alone in its process (argv: the maker's name, a scratch folder)
CHECK = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from gpu_backend.devices.host_memory_board import MemoryBoard
    from gpu_backend.devices.host_turns import DeviceTurns
    from gpu_backend.devices.swap_file_io import SwapFileReader
    from gpu_backend.protocol.staging import StagingRing
    from gpu_backend.worker.spin_slots import SpinSlots, make_slot_file

    def staging_ring(tmp):
        ring = StagingRing.create(4096)
        return ring, ring.fd

    def spin_slots(tmp):
        slots = SpinSlots(make_slot_file(2, str(tmp)), 2)
        return slots, slots._fd

    def swap_reader(tmp):
        (tmp / "swap").write_bytes(bytes(4096))
        reader = SwapFileReader(tmp / "swap", threads=1)
        return reader, reader._fd

    def device_turns(tmp):
        turns = DeviceTurns(str(tmp / "turns"))
        return turns, turns._fd

    def memory_board(tmp):
        board = MemoryBoard(str(tmp / "board"), 1 << 20)
        return board, board._fd

    make = {f.__name__: f for f in (staging_ring, spin_slots, swap_reader, device_turns,
                                    memory_board)}[sys.argv[1]]
    owner, number = make(Path(sys.argv[2]))
    owner.close()
    try:
        os.fstat(number)
        sys.exit("the number is still open after the first close")
    except OSError:
        pass
    read, write = os.pipe()
    os.dup2(read, number)            # someone else's descriptor now has it
    owner.close()                    # closed again
    os.write(write, b"still mine")
    assert os.read(number, 64) == b"still mine", "the second close closed the pipe"
""")
MAKERS = ("device_turns", "memory_board", "spin_slots", "staging_ring", "swap_reader")


@pytest.mark.parametrize("maker", MAKERS)
def test_a_second_close_leaves_the_number_s_next_owner_alone(tmp_path: Path, maker: str) -> None:
    if maker == "staging_ring" and not staging.available():
        pytest.skip("no memfd on this host")
    done = subprocess.run([sys.executable, "-c", CHECK, maker, str(tmp_path)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_suite_s_os_close_refuses_an_eventfd():
    """tests/close_guard.py: in the suite's processes an ``os.close`` of an eventfd (what
    libzmq's mailboxes are) raises where it is made."""
    from tests import close_guard
    fd = os.eventfd(0)
    try:
        with pytest.raises(AssertionError, match="eventfd"):
            os.close(fd)
        os.fstat(fd)   # still open
    finally:
        close_guard._close(fd)


def test_the_suite_s_os_close_refuses_a_live_socket_s_descriptor():
    """tests/close_guard.py: a raw ``os.close`` of a number a live socket object holds
    raises; once that socket is closed, detached or collected, the number is free again."""
    import gc
    import socket
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with pytest.raises(AssertionError, match="live socket"):
            os.close(held.fileno())
        os.fstat(held.fileno())   # still open
    finally:
        held.close()
    detached = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.close(detached.detach())
    collected = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    number = collected.fileno()
    del collected
    gc.collect()
    read, write = os.pipe()   # (the lowest free numbers: most likely the collected one's)
    os.close(read)
    os.close(write)
    assert number >= 0


def test_the_suite_s_socket_refuses_a_second_object_over_a_live_socket_s_descriptor():
    """tests/close_guard.py: ``socket.socket(fileno=n)`` over a number a live socket object
    holds raises (and closes nothing); over a detached number it is the number's owner."""
    import socket
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with pytest.raises(AssertionError, match="a live socket object holds"):
            socket.socket(fileno=held.fileno())
        os.fstat(held.fileno())   # still open
        held.getsockname()        # and still the same socket's
    finally:
        held.close()
    given = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    taken = socket.socket(fileno=given.detach())
    taken.close()


def test_the_suite_s_dup2_refuses_a_target_that_is_not_free():
    """tests/close_guard.py: ``os.dup2`` onto a number a live socket object holds, or onto
    an eventfd, raises: it would close that descriptor first."""
    import socket
    from tests import close_guard
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    read, write = os.pipe()
    event = os.eventfd(0)
    try:
        with pytest.raises(AssertionError, match="live socket"):
            os.dup2(read, held.fileno())
        with pytest.raises(AssertionError, match="eventfd"):
            os.dup2(read, event)
        os.fstat(held.fileno())
        os.fstat(event)
    finally:
        held.close()
        close_guard._close(event)
        os.close(read)
        os.close(write)
