"""The worker's common op, run inline: an operator, method or function whose result is an
array, its metadata taken at the batch's end and only for arrays the client still holds.

The executor runs these without its general dispatch (benchmarks/worker_micro.py: it was
most of the worker's time per op beside the library's own). What it may skip is only
what cannot apply: a creation call the device checks first, a method of something that
is not an array and a name off the allow-list still take the general path. Both handle
table modes run here on the NumPy device: with the device's memory account (the NumPy
device's own), and without it, as on a GPU, where CuPy's pool enforces the limit.
"""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from gpu_backend.devices import open_device
from gpu_backend.protocol import codec
from gpu_backend.worker import Executor, HandleTable

H = codec.Handle


def _executor(tracks: bool) -> tuple[Executor, HandleTable]:
    device = open_device("cpu")
    if not tracks:   # as on a GPU: the device's own pool enforces the limit
        device.tracks_memory = False
    table = HandleTable(device)
    executor = Executor(device, table)
    table.put(1, np.arange(6, dtype=np.float32).reshape(2, 3))
    return executor, table


def _run(executor: Executor, records: list) -> dict:
    """One batch of ``(seq, kind, out, name, target, args)`` op records and bare free
    records; returns the reply, its metadata decoded into a map by handle."""
    pack = codec.make_packer().pack
    parts = [codec.packb({"k": b"", "b": 1, "n": sum(type(r) is tuple for r in records), "r": None})]
    for record in records:
        if type(record) is int:
            parts.append(pack(record))
        else:
            seq, kind, out, name, target, args = record
            parts += [pack([seq, kind, "a", out, name]), pack([target, args, {}])]
    header, ops = executor.open_batch(b"".join(parts))
    reply, _ = executor.run_batch(header, ops, [])
    executor.after_reply()
    reply["m"] = {entry[0]: entry for entry in msgpack.unpackb(reply["m"])}
    return reply


CHAIN = [   # y = maximum(x + 1, 2).copy().sum(axis=0): each step's input dropped after it
    (1, "o", 10, "add", None, [H(1), 1]),
    (2, "f", 11, "maximum", None, [H(10), 2]),
    10,
    (3, "m", 12, "copy", H(11), []),
    11,
    (4, "m", 13, "sum", H(12), [0]),
    12,
]


@pytest.mark.parametrize("tracks", [True, False], ids=["memory-account", "no-account"])
def test_a_chain_of_operator_function_and_method_ops(tracks):
    executor, table = _executor(tracks)
    reply = _run(executor, CHAIN)
    assert reply["e"] is None and reply["x"] == 4
    expected = np.maximum(np.arange(6, dtype=np.float32).reshape(2, 3) + 1, 2).sum(axis=0)
    np.testing.assert_array_equal(table.get(13), expected)
    assert sorted(table.arrays) == [1, 13]          # the frees were honoured
    assert list(reply["m"]) == [13]                 # metadata only for what the client holds
    assert reply["m"][13][1:] == [[3], "<f4", [4], 1 | 2 | 4]
    if tracks:   # the account follows the table: the dropped temporaries are not counted
        assert executor.device.memory_used() == table.get(1).nbytes + table.get(13).nbytes


@pytest.mark.parametrize("tracks", [True, False], ids=["memory-account", "no-account"])
def test_a_function_result_kept_by_the_client_sends_its_metadata(tracks):
    executor, table = _executor(tracks)
    reply = _run(executor, [(1, "f", 20, "exp", None, [H(1)])])
    assert list(reply["m"]) == [20]
    np.testing.assert_allclose(table.get(20), np.exp(np.arange(6, dtype=np.float32).reshape(2, 3)))


@pytest.mark.parametrize("tracks", [True, False], ids=["memory-account", "no-account"])
def test_a_creation_call_is_still_checked_before_it_runs(tracks):
    executor, table = _executor(tracks)
    executor.device.set_memory_limit(1 << 20)
    reply = _run(executor, [(1, "f", 30, "zeros", None, [[1 << 20]]), (2, "o", 31, "add", None, [H(1), 1])])
    assert reply["e"][:2] == [1, "OutOfMemoryError"]
    assert 30 not in table.arrays and 31 not in table.arrays   # the op after it never ran
    assert reply["x"] == 0


def test_a_name_off_the_allow_list_is_refused_by_name():
    executor, _ = _executor(False)
    reply = _run(executor, [(1, "f", 40, "no_such_function", None, [H(1)])])
    assert reply["e"][:2] == [1, "NotAllowedError"]
    assert "no_such_function" in reply["e"][2]


def test_a_method_of_something_not_an_array_is_refused():
    executor, _ = _executor(False)
    reply = _run(executor, [(1, "m", 50, "copy", 3.5, [])])
    assert reply["e"][:2] == [1, "ProtocolError"]
    assert "array handle" in reply["e"][2]


def test_a_structured_result_is_stored_in_either_mode():
    for tracks in (True, False):
        executor, table = _executor(tracks)
        table.put(2, np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
        reply = _run(executor, [(1, "m", 60, "copy", H(2), []), (2, "m", 61, "copy", H(60), [])])
        assert reply["e"] is None
        assert table.get(61).dtype == np.dtype([("a", "<f4"), ("b", "<i4")])


def test_dropping_an_object_handle_without_a_memory_account_drops_the_object():
    executor, table = _executor(False)
    table.put_object(70, object())
    reply = _run(executor, [70, (1, "o", 71, "add", None, [H(1), 1])])
    assert reply["e"] is None
    assert 70 not in table.objects and 71 in table.arrays


@pytest.mark.parametrize("name,args", [("add", [H(1), H(1)]), ("mul", [H(1), 2.5]),
                                       ("lt", [H(1), 0]), ("neg", [H(1)])])
def test_an_operator_result_over_the_limit_is_refused_before_it_runs(name, args):
    """The NumPy device sizes an operator's result before NumPy allocates it (NumPy 2.4
    refused the ``signature=None`` the sizing passed: every operator then ran unchecked)."""
    executor, table = _executor(True)
    executor.device.set_memory_limit(table.get(1).nbytes + 4)   # (a bool result is 6 bytes)
    reply = _run(executor, [(1, "o", 50, name, None, args)])
    assert reply["e"][:2] == [1, "OutOfMemoryError"]
    assert 50 not in table.arrays
