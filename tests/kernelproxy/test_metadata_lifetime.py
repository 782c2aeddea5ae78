"""An array's metadata (shape, dtype, strides, flags) travels from the worker to the
client once, for arrays the client still holds, and is kept on the client only while
its array lives.

In a chain of ops (``x = x + 1`` in a loop, a training step's temporaries) each result
is dropped one op later. Its free record then follows in the same batch, and the worker
sends no metadata for it; where the drop came after the batch left, the client drops
the metadata when it comes. Before, every such entry stayed in the session's metadata for the
session's life (20 000 entries after 20 000 ``x = x + 1``). The worker's side runs in
this process on the NumPy device; the rest through a real pool and worker."""

from __future__ import annotations

import gc

import msgpack
import numpy as np
import pytest

import kernelproxy
from gpu_backend.devices import open_device
from gpu_backend.protocol import codec
from gpu_backend.worker import Executor, HandleTable
from kernelproxy.modules import module_for
from kernelproxy.session import FLUSH_OPS


@pytest.fixture
def fresh(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    yield s
    s.close()


# ------------------------------------------------------------------ the worker's side
def _batch(records: list) -> bytes:
    pack = codec.make_packer().pack
    header = codec.packb({"k": b"", "b": 1, "n": sum(type(r) is list for r in records), "r": None})
    parts = [header]
    for record in records:
        if type(record) is int:      # a free record
            parts.append(pack(record))
        else:                        # (seq, out, operand handle, scalar): out = operand + scalar
            seq, out, operand, scalar = record
            parts += [pack([seq, "o", "a", out, "add"]), pack([None, [codec.Handle(operand), scalar], {}])]
    return b"".join(parts)


def _metas_of(executor: Executor, body: bytes) -> dict:
    header, ops = executor.open_batch(body)
    reply, _ = executor.run_batch(header, ops, [])
    executor.after_reply()
    assert reply["e"] is None, reply["e"]
    return {entry[0]: entry for entry in msgpack.unpackb(reply["m"])}


def test_results_dropped_in_their_own_batch_send_no_metadata():
    device = open_device("cpu")
    table = HandleTable(device)
    executor = Executor(device, table)
    table.put(1, np.arange(6, dtype=np.float32).reshape(2, 3))
    # x = x + 1 three times: 10 and 11 are dropped by the client one op later
    metas = _metas_of(executor, _batch([(1, 10, 1, 1), (2, 11, 10, 1), 10, (3, 12, 11, 1), 11]))
    assert list(metas) == [12]
    assert metas[12][1:] == [[2, 3], "<f4", [12, 4], 1 | 4]   # C-contiguous, owns its data
    np.testing.assert_array_equal(table.get(12), np.arange(6).reshape(2, 3) + 3)
    # a result freed in a later batch had its metadata in its own batch's reply
    assert list(_metas_of(executor, _batch([12, (4, 13, 1, 5)]))) == [13]


def test_a_failed_op_still_sends_the_metadata_of_the_results_before_it():
    device = open_device("cpu")
    table = HandleTable(device)
    executor = Executor(device, table)
    table.put(1, np.zeros(3))
    header, ops = executor.open_batch(_batch([(1, 10, 1, 1), (2, 11, 999, 1), (3, 12, 10, 1)]))
    reply, _ = executor.run_batch(header, ops, [])
    assert reply["e"][0] == 2 and reply["e"][1] == "InvalidHandleError"
    assert [entry[0] for entry in msgpack.unpackb(reply["m"])] == [10]


# ------------------------------------------------------------------ the client's side
def test_a_chain_of_dropped_results_leaves_no_metadata_behind(fresh):
    cp = module_for(fresh)
    x = cp.zeros(8, dtype=cp.float32)
    n = 3 * FLUSH_OPS + 17    # several early batches and full ones
    for _ in range(n):
        x = x + 1
    assert float(x.sum()) == 8.0 * n
    assert x.shape == (8,)
    assert len(fresh.meta.entries) <= 1           # the sum's result, not yet read (it was: popped)
    assert not fresh.meta.dropped_early       # the sync forgot the drops it waited for


def test_an_array_dropped_before_its_reply_does_not_keep_its_metadata(fresh):
    cp = module_for(fresh)
    x = cp.arange(5, dtype=cp.float64)
    y = x * 2
    slow = cp.ones(4_000_000) * 3     # (tens of ms on the NumPy device: the reply stays away
    fresh.flush()                     # while the client drops y) y's op is in flight: its
    hid = y._h                        # metadata is still to come
    del y
    gc.collect()
    assert hid in fresh.meta.dropped_early
    assert float(x.sum()) == 10.0     # the reply came: its entry for y was not kept
    assert hid not in fresh.meta.entries and hid not in fresh.meta.dropped_early
    del slow


def test_metadata_kept_for_live_arrays_whatever_was_dropped_beside_them(fresh):
    cp = module_for(fresh)
    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    kept = []
    for i in range(40):
        t = x + i               # dropped at the next turn, in the same batch or a later one
        if i % 7 == 0:
            kept.append(t.T)    # a view: its own strides
    fresh.sync()
    for i, a in zip(range(0, 40, 7), kept):
        assert a.shape == (4, 3) and a.dtype == np.float32 and a.strides == (4, 16)
        assert not a.flags.c_contiguous and a.flags.f_contiguous
        np.testing.assert_array_equal(a.get(), (np.arange(12, dtype=np.float32).reshape(3, 4) + i).T)
    # a real array's conj() is the array itself once its metadata is here
    r = x * 1
    fresh.sync()
    assert r.conj() is r


def test_a_drop_whose_op_failed_is_forgotten_at_the_next_sync(fresh):
    cp = module_for(fresh)
    x = cp.ones(3)
    with pytest.raises(ValueError):
        y = x.reshape(7)      # fails on the pool: its result never gets metadata
        fresh.flush()
        del y
        fresh.sync()
    gc.collect()
    assert float(x.sum()) == 3.0
    assert not fresh.meta.dropped_early


def test_drops_before_the_batch_leaves_are_not_remembered(fresh):
    """A result dropped while its op is still queued gets no metadata (its free record
    travels in the same batch), so the client need not remember the drop either: a long
    stream of ops between two syncs keeps nothing per op."""
    cp = module_for(fresh)
    x = cp.zeros(4)
    fresh.sync()
    fresh.eager_flush = False     # every op stays queued until the sync
    batches = fresh._batch
    n = FLUSH_OPS // 2 - 10      # each turn queues two records: the op and the last one's free
    for _ in range(n):
        x = x + 1
    assert fresh._batch == batches and not fresh.meta.dropped_early
    assert float(x[0]) == n
    assert not fresh.meta.entries or list(fresh.meta.entries) == [x._h]


def test_an_array_dropped_in_another_thread_while_the_session_is_busy_never_waits(fresh):
    """An array's ``__del__`` runs in whatever thread the collector runs in: an embedded
    pool's arbiter or front door once collected a proxy while the user's thread held the
    session waiting for that very pool (a deadlock, tests/kernelproxy/test_memory_pointers.py
    hung so). The free never waits for the lock: it waits in the session until the next
    call that takes it, and then reaches the worker."""
    import threading

    cp = module_for(fresh)
    kept = [cp.arange(4096, dtype=np.float64)]
    float(kept[0].sum())
    hid = kept[0]._h
    arrays = fresh.memory_info()["arrays"]
    held, go = threading.Event(), threading.Event()

    def busy():   # the user's thread, in a sync, holding the session
        with fresh._lock:
            held.set()
            go.wait(60)

    def collect():   # another thread drops the last reference
        kept.pop()

    holder = threading.Thread(target=busy)
    holder.start()
    assert held.wait(60)
    dropper = threading.Thread(target=collect)
    dropper.start()
    dropper.join(30)
    try:
        assert not dropper.is_alive()   # (it waited for the lock before: for ever, here)
    finally:
        go.set()
        holder.join(60)
    assert hid in [h for h, _ in fresh._late_frees]
    assert float(cp.ones(2).sum()) == 2   # the next op takes the free with it
    assert hid not in fresh.arrays and not fresh._late_frees
    assert fresh.memory_info()["arrays"] == arrays - 1
