"""The NumPy device's turns (gpu_backend/devices/host_turns.py): its sessions' workers run
their ops one at a time, handed round those that wait, as one GPU's contexts share its cores;
a worker killed while it waited stalls nobody; a pool with ``numpy_device_turns`` computes
as one without."""

from __future__ import annotations

import json
import multiprocessing
import os
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.devices.host_turns import DeviceTurns
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from tests.waiting import until

TURNS = 40


def _take_turns(path: str, out: str, together) -> None:
    """A worker's part: TURNS turns of about a millisecond of CPU work each, their times
    written to *out*."""
    turns = DeviceTurns(path)
    together.wait()
    held = []
    for _ in range(TURNS):
        with turns:
            began = time.monotonic()
            while time.monotonic() - began < 0.001:
                pass
            held.append((began, time.monotonic()))
    turns.close()
    with open(out, "w") as f:
        json.dump(held, f)


def _wait_for_a_turn(path: str) -> None:
    DeviceTurns(path).__enter__()   # (blocks: the test holds the turn; it is killed here)


@pytest.fixture
def spawn():
    ctx = multiprocessing.get_context("spawn")
    children = []

    def start(target, *args):
        child = ctx.Process(target=target, args=args, daemon=True)
        child.start()
        children.append(child)
        return child
    yield start, ctx
    for child in children:
        child.kill()
        child.join(10)


def test_workers_take_turns_one_at_a_time(tmp_path, spawn):
    start, ctx = spawn
    path = str(tmp_path / "turns-cpu:0.lock")
    together = ctx.Barrier(2)   # (each starts once both have their turns open)
    outs = [str(tmp_path / f"held-{k}.json") for k in range(2)]
    children = [start(_take_turns, path, out, together) for out in outs]
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    held = sorted((b, e, k) for k, out in enumerate(outs) for b, e in json.load(open(out)))
    assert len(held) == 2 * TURNS
    for (_, end, _), (begin, _, _) in zip(held, held[1:]):
        assert begin >= end      # never two workers' ops at once


def _one_turn(path: str) -> None:
    with DeviceTurns(path):
        pass


def test_a_turn_let_go_while_another_waits_goes_to_it(tmp_path, spawn):
    """The holder lets its turn go and asks again at once: the waiting worker has its turn
    first, however late a loaded host wakes it (a record lock alone would go back to the
    holder, which asks before the other wakes)."""
    start, _ = spawn
    path = str(tmp_path / "turns-cpu:0.lock")
    turns = DeviceTurns(path)
    with turns:
        child = start(_one_turn, path)
        assert until(lambda: bool(np.count_nonzero(turns._waiting)), 60)   # it waits
    with turns:
        assert turns._words[0] == 3   # ours, the child's, ours
    child.join(60)
    assert child.exitcode == 0
    turns.close()


def test_a_worker_killed_while_it_waits_stalls_nobody(tmp_path, spawn):
    start, _ = spawn
    path = str(tmp_path / "turns-cpu:0.lock")
    turns = DeviceTurns(path)
    with turns:
        child = start(_wait_for_a_turn, path)
        assert until(lambda: bool(np.count_nonzero(turns._waiting)), 60)   # it waits
        waiting = int(np.flatnonzero(turns._waiting)[0])
        child.kill()
        child.join(10)
    # letting the turn go, the holder found the waiting slot's worker gone and cleared it
    assert turns._waiting[waiting] == 0
    with turns:   # and takes its next turn at once
        pass
    assert turns.taken == 2
    turns.close()


def _turns_taken(pool: LocalPool) -> int | None:
    """The turns the pool's NumPy device counted (None: it has no turns file)."""
    path = os.path.join(pool.door.hosts.get("").run_dir, "turns-cpu:0.lock")
    return int(np.fromfile(path, np.int64, 1)[0]) if os.path.exists(path) else None


@pytest.mark.parametrize("turns", [True, False], ids=["turns", "own-cores"])
def test_a_pool_whose_device_takes_turns_computes_as_one_without(turns):
    a = np.arange(64.0).reshape(8, 8) / 7
    expected = np.sqrt((a @ a + 1) * 2)
    with LocalPool(devices="cpu", numpy_device_turns=turns) as pool:
        with kernelproxy.connect(pool.address, pool.token) as session:
            cp = module_for(session)
            x = cp.asarray(a)
            for _ in range(6):   # (a loop that repeats: its later iterations replay)
                z = cp.sqrt((x @ x + 1) * 2)
                total = float(z.sum())
            assert total == float(expected.sum())
            assert np.array_equal(z.get(), expected)
            taken = _turns_taken(pool)
    if turns:
        assert taken is not None and taken >= 6 * 4   # each op of each iteration a turn
    else:
        assert taken is None
