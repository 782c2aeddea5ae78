"""Spin slots: a worker holding one polls for a while after each message, so that the
next sync after a short pause finds it awake; the pool hands out a fixed number, and a
killed worker's slot comes back by itself.

The slot locks are per process, so the holders here are real processes: small scripts
and the pool's own workers. The workers' phase diagnostic (``GPUWB_WORKER_PHASES``)
says whether each message was caught by the spin or woke a sleeping poll."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.worker.spin_slots import SpinSlots, default_slot_count, make_slot_file
from kernelproxy.modules import module_for

from tests.waiting import until

HOLDER = """
import sys
from gpu_backend.worker.spin_slots import SpinSlots
slots = SpinSlots(sys.argv[1], int(sys.argv[2]))
print(slots.claim(), slots.slot, flush=True)
sys.stdin.readline()
"""


def _holder(path: str, count: int) -> tuple[subprocess.Popen, str]:
    """A process that claims a slot and holds it until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, path, str(count)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def test_slots_are_shared_out_and_a_killed_holders_comes_back(tmp_path):
    path = make_slot_file(2, str(tmp_path))
    first, said = _holder(path, 2)
    second, said_too = _holder(path, 2)
    mine = SpinSlots(path, 2)
    try:
        assert said.startswith("True") and said_too.startswith("True")
        assert said.split()[1] != said_too.split()[1]          # two different slots
        assert not mine.claim() and not mine.held               # none left
        first.kill()
        first.wait()
        assert until(mine.claim, 10.0, step=0.02)   # the kernel gave its slot back
        assert mine.slot == int(said.split()[1])
        mine.release()
        assert not mine.held
        third, said_third = _holder(path, 2)                    # released: free for another
        assert said_third.startswith("True")
        third.kill()
        third.wait()
    finally:
        second.kill()
        second.wait()
        mine.close()


def test_no_slots_means_nobody_spins_long(tmp_path):
    slots = SpinSlots(make_slot_file(0, str(tmp_path)), 0)
    assert not slots.claim()
    slots.close()


def test_the_default_leaves_small_hosts_alone():
    cores = len(os.sched_getaffinity(0))
    assert default_slot_count() == max(0, (cores - 2) // 2)
    assert default_slot_count() < max(cores, 1)


# ------------------------------------------------------------------ through a pool
def _syncs_after_pauses(pool: LocalPool, pause: float, count: int = 8) -> None:
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(session)
        x = cp.arange(10)
        float(x.sum())
        for _ in range(count):
            time.sleep(pause)
            assert float((x + 1).sum()) == 55.0
    finally:
        session.close()


def _phases(directory) -> dict:
    """The one session worker's phase summary (written as its session ends)."""
    found: list[dict] = []

    def read() -> bool:
        for path in glob.glob(os.path.join(directory, "phases-*.json")):
            try:
                with open(path) as f:
                    found.append(json.load(f))
            except ValueError:   # still being written
                return False
        return bool(found)

    assert until(read, 10.0, step=0.02)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("slots, spun", [(1, True), (0, False)])
def test_a_worker_with_a_slot_is_awake_after_a_pause(tmp_path, monkeypatch, slots, spun):
    monkeypatch.setenv("GPUWB_WORKER_PHASES", str(tmp_path))
    with LocalPool(devices="cpu", spin_slots=slots, worker_spin_ms=1000, spare_workers=0) as pool:
        _syncs_after_pauses(pool, pause=0.05)
        summary = _phases(tmp_path)
    if spun:   # every sync after the first found the worker still polling
        assert summary["woke"] <= 2, summary
    else:      # no slot: the short spin ends long before 50 ms, so each one woke it
        assert summary["spun"] <= 2 and summary["woke"] >= 8, summary


def test_a_worker_gives_its_slot_back_after_its_window(tmp_path):
    with LocalPool(devices="cpu", spin_slots=1, worker_spin_ms=300, spare_workers=0) as pool:
        path, count = pool.door.host.spin_slots
        assert pool.door.status()["spin"] == {"slots": 1, "window_ms": 300}
        mine = SpinSlots(path, count)
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(session)

            def worker_holds_the_slot() -> bool:
                # the worker claims it as its short spin ends, just after the reply: probe
                # by claiming, and on success give it back and sync again (a new chance)
                assert float(cp.arange(4).sum()) == 6.0
                if not mine.claim():
                    return True
                mine.release()
                return False

            assert until(worker_holds_the_slot, 5.0, step=0.02)   # the worker spins on its slot
            assert until(mine.claim, 5.0, step=0.02)            # ... and sleeps 0.3 s later
            mine.release()
            assert float(cp.arange(4).sum()) == 6.0   # it serves on, asleep or awake
        finally:
            session.close()
            mine.close()
    assert not os.path.exists(path)                     # the pool removed its slot file


def test_a_slot_held_by_one_session_leaves_the_other_the_short_spin(tmp_path, monkeypatch):
    """One slot, two sessions: the second finds none and sleeps, and is served all the same."""
    # (set before the pool starts: its workers start with its environment as it started)
    monkeypatch.setenv("GPUWB_WORKER_PHASES", str(tmp_path))
    with LocalPool(devices="cpu", spin_slots=1, worker_spin_ms=300, spare_workers=0) as pool:
        path, count = pool.door.host.spin_slots
        squatter, said = _holder(path, count)   # holds the only slot
        try:
            assert said.startswith("True")
            _syncs_after_pauses(pool, pause=0.05)
            summary = _phases(tmp_path)
            assert summary["woke"] >= 8, summary
        finally:
            squatter.kill()
            squatter.wait()


def test_a_worker_whose_slot_file_is_gone_still_serves():
    with LocalPool(devices="cpu", spin_slots=2, worker_spin_ms=50, spare_workers=0) as pool:
        os.unlink(pool.door.host.spin_slots[0])        # (a temp cleaner, say) before any worker starts
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            assert float(module_for(session).arange(4).sum()) == 6.0
        finally:
            session.close()
