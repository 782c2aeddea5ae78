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


def test_a_yield_word_is_seen_by_another_process_and_only_for_its_grant(tmp_path):
    """The arbiter marks a preempted holder's grant in the holder's yield word; the holder
    (another process) sees it for that grant or an older one, not for a newer one, and a
    slot handed out again starts clear."""
    board = BatonBoard(str(tmp_path / "baton"))
    try:
        slot = board.take()
        board.preempt(slot, 12)
        probe = ("from gpu_backend.arbiter.baton import Baton; b = Baton({!r}); "
                 "print(b.preempted({}, 12), b.preempted({}, 11), b.preempted({}, 13))")
        out = subprocess.run([sys.executable, "-c", probe.format(board.path, slot, slot, slot)],
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.split() == ["True", "True", "False"]
        baton = Baton(board.path)
        assert not baton.wait(slot, 12, timeout=0)              # the other word: untouched
        board.give_back(slot)
        assert board.take() == slot and not baton.preempted(slot, 1)
        baton.close()
    finally:
        board.close()
