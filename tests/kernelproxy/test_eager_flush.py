"""Ops go to the worker while the client keeps issuing (Session.eager_flush): once
EAGER_OPS are queued and nothing is in flight they are sent, the size that goes early
doubles until the next sync, and a sync of a few ops stays one batch. Real pool, real
worker (the NumPy device)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelproxy
from kernelproxy.modules import module_for
from kernelproxy.session import EAGER_OPS, FLUSH_OPS


@pytest.fixture
def fresh(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    s.loop_cuts = False   # (the streams here repeat one op: a loop cut would cut them)
    yield s
    s.close()


def _issue(cp, x, n):
    """*n* ops, each one record (in place: no handle released beside it)."""
    for _ in range(n):
        x += 1
    return x


def test_a_few_ops_stay_queued_until_the_sync(fresh):
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    batches = fresh._batch
    y = _issue(cp, x, EAGER_OPS - 1)
    assert fresh._batch == batches and len(fresh._ops) == EAGER_OPS - 1
    assert float(y.sum()) == 4 * (EAGER_OPS - 1)   # the sync sends them
    assert fresh._batch > batches


def test_ops_go_early_and_the_early_size_doubles(fresh):
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    batches = fresh._batch
    x = _issue(cp, x, EAGER_OPS)
    assert fresh._batch == batches + 1 and not fresh._ops   # sent without a sync
    fresh._wait_all()                                        # the worker is idle again
    x = _issue(cp, x, EAGER_OPS)
    assert fresh._batch == batches + 1 and len(fresh._ops) == EAGER_OPS   # now 16 go early
    x = _issue(cp, x, EAGER_OPS)
    assert fresh._batch == batches + 2 and not fresh._ops
    np.testing.assert_array_equal(x.get(), np.full(4, 3.0 * EAGER_OPS))
    y = _issue(cp, x, EAGER_OPS)   # after the sync, 8 go early again
    assert fresh._batch == batches + 4 and not fresh._ops
    assert float(y[0]) == 4 * EAGER_OPS


def test_the_early_size_stops_at_a_full_batch(fresh):
    cp = module_for(fresh)
    x = cp.zeros(2)
    fresh.sync()
    sizes, issued = [], 0
    while fresh._eager_at < FLUSH_OPS or len(sizes) < 8:
        size = fresh._eager_at
        x = _issue(cp, x, size)
        issued += size
        assert not fresh._ops            # the whole early size went
        fresh._wait_all()                # (the worker idle again: the next one goes at once)
        sizes.append(size)
    assert sizes == [EAGER_OPS * 2 ** i for i in range(7)] + [FLUSH_OPS] and FLUSH_OPS == EAGER_OPS * 2 ** 6
    assert float(x[1]) == issued


def test_held_ops_wait_for_the_sync(fresh):
    fresh.eager_flush = False
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    batches = fresh._batch
    x = _issue(cp, x, 3 * EAGER_OPS)
    assert fresh._batch == batches and len(fresh._ops) == 3 * EAGER_OPS
    assert float(x[0]) == 3 * EAGER_OPS


def test_an_error_in_an_early_batch_is_raised_and_the_session_goes_on(fresh):
    cp = module_for(fresh)
    x = cp.zeros(4)
    bad = x.reshape(3)             # fails in the pool, inside the first early batch
    # raised at the first op issued after the batch's reply came back, or at the sync: which
    # one depends on how soon the pool answered (a fast worker answers while ops are issued)
    with pytest.raises(ValueError, match="reshape"):
        _issue(cp, x, EAGER_OPS)
        fresh.sync()
    assert float(cp.arange(4).sum()) == 6
    del bad


def test_a_chain_that_drops_each_result_goes_early_too(fresh):
    """``x = x + 1`` queues a free record beside each op, so the queue's length passes the
    early size between two ops; the ops still go as soon as that many records are queued
    (the first check looked only at multiples of EAGER_OPS, which such a chain never hit)."""
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    batches = fresh._batch
    for n in range(1, EAGER_OPS):
        x = x + 1
        if fresh._batch > batches:
            break
    assert fresh._batch == batches + 1, "the chain was held until the sync"
    assert len(fresh._ops) < EAGER_OPS
    np.testing.assert_array_equal(x.get(), np.full(4, float(n)))


def test_growth_one_keeps_the_early_size(fresh, monkeypatch):
    """A session's eager_growth of 1: every early batch is EAGER_OPS records, however many
    went before it."""
    monkeypatch.setattr(fresh, "eager_growth", 1)
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    batches = fresh._batch
    for turn in range(1, 4):
        x = _issue(cp, x, EAGER_OPS)
        assert fresh._batch == batches + turn and not fresh._ops
        fresh._wait_all()   # the worker is idle again
    assert float(x[0]) == 3 * EAGER_OPS
