"""Pushed replies in a notebook's mixed life (worker/pushed_replies.py, kernelproxy/
pushed_replies.py): random sequences, seeded, of the loops the steady lane pushes (a hot
sync, a step that writes its input in place, a loop-carried array, two reads a step, a
matrix product before the read, a random walk's draws) with
other reads between them, moves to the pool's other device, pauses long enough to be
swapped out, status calls, early replay on or off. Every value read is the one NumPy gives
for the same float32 ops, and no batch waits for ever: the sequence of the CI failure where
the old worker's dropped chain made the client drop the new worker's pushes is one of these
shapes (a read between pushes, then a move, then a pushed loop). The walk's values are
those of the same draws on a session without replay. (A session holding a RandomState
cannot move, a documented limit of moves: once the walk began, moves are left out.)"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from .test_moves import _move
from .test_pushed_replies import _swap_pool

F32 = np.float32
#: the sequences' seeds: each gives another order of the actions below
SEEDS = range(6)
ACTIONS = ["hot"] * 4 + ["other", "write"] * 2 + ["two", "carry", "move", "swap", "info",
                                                  "product", "walk"]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """Two NumPy devices whose workers run every replay ahead and make its reads at once,
    idle sessions swapped out after 0.3 s (test_pushed_replies.py's ``_swap_pool``)."""
    with pytest.MonkeyPatch.context() as env, \
            _swap_pool(tmp_path_factory.mktemp("mixed"), "cpu,cpu", env) as p:
        yield p


class _Mirror:
    """The session's arrays and their NumPy twins, stepped together."""

    def __init__(self, cp) -> None:
        self.cp = cp
        self.hx = np.arange(1000, dtype=F32) / F32(3)
        self.hw = np.linspace(0, 2, 256, dtype=F32)
        self.hu = np.zeros(64, dtype=F32)
        self.ha = np.random.default_rng(56).random((32, 32), dtype=F32)
        self.x, self.w, self.u, self.a = (cp.asarray(h) for h in (self.hx, self.hw, self.hu, self.ha))
        #: the walk's generator (made at its first step: a session holding one cannot move)
        self.rs = None
        self.position = cp.zeros(100)
        self.walked: list = []

    def hot(self) -> None:
        assert float((self.x + 1).sum()) == float((self.hx + F32(1)).sum())

    def other(self) -> None:
        assert float((self.x * 2).max()) == float((self.hx * F32(2)).max())

    def write(self) -> None:
        self.w -= F32(0.1) * (self.w - 1)
        self.hw -= F32(0.1) * (self.hw - F32(1))
        assert float(self.w.sum()) == float(self.hw.sum())

    def two(self) -> None:
        y, hy = self.x * 0.5 + 1.0, self.hx * F32(0.5) + F32(1.0)
        assert float(y.sum()) == float(hy.sum())
        assert float((y - 1).max()) == float((hy - F32(1)).max())

    def carry(self) -> None:
        self.u = self.u * 0.5 + 1.0
        self.hu = self.hu * F32(0.5) + F32(1.0)
        assert float(self.u[3]) == float(self.hu[3])

    def product(self) -> None:
        got = float((self.a @ self.x[:32] + 1).sum())
        assert got == float((self.ha @ self.hx[:32] + F32(1)).sum())

    def walk(self) -> None:
        if self.rs is None:
            self.rs = self.cp.random.RandomState(57)
        self.position = self.position + self.rs.standard_normal(100)
        self.walked.append(float(self.position.std()))


def _walked_without_replay(pool, steps: int) -> list:
    """The walk's values on a session without stretch replay: the same draws, in order."""
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        cp = module_for(s)
        rs, position, values = cp.random.RandomState(57), cp.zeros(100), []
        for _ in range(steps):
            position = position + rs.standard_normal(100)
            values.append(float(position.std()))
    return values


@pytest.mark.parametrize("seed", SEEDS)
def test_pushed_loops_among_other_reads_moves_and_swaps_keep_every_value(pool, seed):
    rng = random.Random(seed)
    settings = SessionSettings(replay_measured=False, early_replay=rng.random() < 0.5)
    with Session(pool.address, pool.token, settings=settings) as s:
        mirror = _Mirror(module_for(s))
        done = []
        for _ in range(rng.randint(20, 40)):
            action = rng.choice(ACTIONS)
            done.append(action)
            if action == "move":
                if mirror.rs is None:
                    _move(pool, s)
            elif action == "swap":
                time.sleep(0.5)   # (idle past swap_idle: swapped out, back at the next batch)
            elif action == "info":
                s.memory_info()
            else:
                for _ in range(1 if action == "other" else rng.randint(1, 30)):
                    getattr(mirror, action)()
        assert np.array_equal(mirror.w.get(), mirror.hw), done
        assert np.array_equal(mirror.u.get(), mirror.hu), done
    assert mirror.walked == _walked_without_replay(pool, len(mirror.walked)), done
