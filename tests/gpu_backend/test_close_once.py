"""Objects that own a raw file descriptor close it once, however often they are closed.

A descriptor's number is free as soon as it is closed, and the next descriptor any thread
makes gets the lowest free number: a pipe, a socket, or libzmq's own eventfd or epoll
descriptor. A second ``os.close`` of the old number then closes that one instead. The
suite's staging-ring fixture closed each ring twice (once itself, once through the
listener); about one full run in ten, a test process then died in a libzmq I/O thread
("Fatal Python error: Aborted"). Each test here closes an object, hands its old number to
a pipe (``os.dup2``: what another thread's next descriptor would be), closes the object
again, and checks that the pipe still works."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from gpu_backend.devices.host_memory_board import MemoryBoard
from gpu_backend.devices.host_turns import DeviceTurns
from gpu_backend.devices.swap_file_io import SwapFileReader
from gpu_backend.protocol import staging
from gpu_backend.worker.spin_slots import SpinSlots, make_slot_file


def _staging_ring(_tmp: Path):
    if not staging.available():
        pytest.skip("no memfd on this host")
    ring = staging.StagingRing.create(4096)
    return ring, ring.fd


def _spin_slots(tmp: Path):
    slots = SpinSlots(make_slot_file(2, str(tmp)), 2)
    return slots, slots._fd


def _swap_reader(tmp: Path):
    path = tmp / "swap"
    path.write_bytes(b"\0" * 4096)
    reader = SwapFileReader(path, threads=1)
    return reader, reader._fd


def _device_turns(tmp: Path):
    turns = DeviceTurns(str(tmp / "turns"))
    return turns, turns._fd


def _memory_board(tmp: Path):
    board = MemoryBoard(str(tmp / "board"), 1 << 20)
    return board, board._fd


@pytest.mark.parametrize("make", [_staging_ring, _spin_slots, _swap_reader, _device_turns,
                                  _memory_board])
def test_a_second_close_leaves_the_number_s_next_owner_alone(tmp_path: Path,
                                                            make: Callable) -> None:
    owner, number = make(tmp_path)
    owner.close()
    with pytest.raises(OSError):
        os.fstat(number)                 # closed: the number is free
    read, write = os.pipe()
    try:
        os.dup2(read, number)            # someone else's descriptor now has it
        owner.close()                    # closed again
        os.write(write, b"still mine")
        assert os.read(number, 64) == b"still mine"
    finally:
        for fd in {read, write, number}:
            try:
                os.close(fd)
            except OSError:
                pass


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
