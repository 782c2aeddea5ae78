"""The hand-over baton (gpu_backend/arbiter/baton.py): slots in a file mapped by workers."""

import subprocess
import sys
import time

from gpu_backend.arbiter.baton import SLOTS, Baton, BatonBoard


def test_a_waiter_sees_another_process_finish(tmp_path):
    board = BatonBoard(str(tmp_path / "baton"))
    try:
        slot = board.take()
        waiter = Baton(board.path)
        assert not waiter.wait(slot, 7, timeout=0.01)          # nothing finished yet
        writer = subprocess.Popen([sys.executable, "-c",
                                   "import time, sys; from gpu_backend.arbiter.baton import Baton; "
                                   f"time.sleep(0.2); Baton({board.path!r}).finished({slot}, 7)"])
        began = time.perf_counter()
        assert waiter.wait(slot, 7, timeout=10)
        assert 0.1 < time.perf_counter() - began < 9
        assert writer.wait(10) == 0
        assert waiter.wait(slot, 6, timeout=0)                 # an older grant: done too
        waiter.close()
    finally:
        board.close()


def test_slots_are_handed_out_once_and_start_at_zero(tmp_path):
    board = BatonBoard(str(tmp_path / "baton"))
    try:
        baton = Baton(board.path)
        first = board.take()
        baton.finished(first, 99)
        taken = {first} | {board.take() for _ in range(SLOTS - 1)}
        assert len(taken) == SLOTS and board.take() is None
        board.give_back(first)
        assert board.take() == first and not baton.wait(first, 1, timeout=0)   # zeroed again
        baton.finished(SLOTS + 5, 1)                            # out of range: ignored
        assert not baton.wait(SLOTS + 5, 1, timeout=0)
        baton.close()
    finally:
        board.close()
