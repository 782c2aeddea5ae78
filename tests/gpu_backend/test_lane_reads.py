"""The steady lane's closing scalar reads by one launch (worker/lane_reads.py): a plan whose
reads are all conversions (``float``, ``int``, ``bool``, ``complex``) of its graphs' 0-d
numeric buffers copies their values into slots of their own by one read graph after its
graphs, and reads the slots. Through a real pool on the test device (the NumPy device in
CI, a GPU with ``GPUWB_TEST_DEVICES``, where ``lane_slot_reads`` also shows that the read
graph was made): every kind of conversion gives the very value, and a failing one its very
error, that the loop gives on a session without replay; a read that is no such conversion
keeps its own path; and the plan's reads are judged as the module says."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from gpu_backend.devices.host_graphs import HostGraphTools
from gpu_backend.protocol.messages import KIND_METHOD, KIND_OPERATOR
from gpu_backend.worker.lane_reads import read_slots
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 60


def _pause() -> None:
    time.sleep(0.002)   # (the user's own Python: the worker's run ahead meanwhile)


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", read_now=True) as p:
        yield p


def _bits(value) -> bytes:
    if isinstance(value, complex):
        return struct.pack("<dd", value.real, value.imag)
    if isinstance(value, float):
        return struct.pack("<d", value)
    return repr(value).encode()


def _reading(convert):
    """A loop whose input steps, one conversion read every step: float of a float32 sum,
    int of an int64 sum, bool of an ``any``, complex of a complex128 sum."""
    def loop(cp):
        x = cp.arange(1000, dtype=cp.float32) / 7
        n = cp.arange(50, dtype=cp.int64)
        z = (cp.arange(40) + 1j * cp.arange(40)) / 3
        out = []
        for i in range(STEPS):
            if convert == "float":
                x = x * 1.0001 + 0.5
                out.append(float(x.sum()))
            elif convert == "int":
                n = n + 3
                out.append(int(n.sum()))
            elif convert == "bool":
                x = x + 1.5
                out.append(bool((x > 200).any()))
            else:
                z = z * 1.0001 + 0.5   # (a real scalar: a complex one's loop is never
                out.append(complex(z.sum()))   # armed in the lane, lane_messages)
            _pause()
        return out
    return loop


@pytest.mark.parametrize("convert", ["float", "int", "bool", "complex"])
def test_each_conversion_is_read_from_its_slot_with_the_very_value(pool, convert):
    got, want, figures = beside_no_replay(pool, _reading(convert))
    assert [type(v) for v in got] == [type(v) for v in want]
    assert [_bits(v) for v in got] == [_bits(v) for v in want]
    assert figures["lane"] >= STEPS // 4, figures
    assert figures["lane_slot_reads"] >= STEPS // 4, figures


def test_a_conversion_that_fails_from_its_slot_fails_as_ever(pool):
    """``int`` of an infinite sum at every twentieth step (a loop-carried count): converted
    from its slot in the lane's run ahead it fails and leaves nothing; the client's replay
    fails as ever, and the other steps read their values from their slots."""
    def loop(cp):
        y = cp.zeros(1, dtype=cp.float64)
        big = cp.full(1, cp.inf)
        out = []
        for _ in range(STEPS):
            y = (y + 1.0) % 20.0
            try:
                out.append(int((big ** ((y > 18.0) * 1.0) + y).sum()))   # (1 + y, or inf)
            except OverflowError as exc:
                out.append(type(exc).__name__)
            _pause()
        return out

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert got == want == [*range(2, 20), "OverflowError", 1] * (STEPS // 20)
    assert figures["lane_slot_reads"] >= 1, figures
    # (each plan whose reads failed at its answer left the lane, counted by why)
    assert figures["lane_left_why"].get("reads failed", 0) >= 1, figures


def test_a_read_that_is_no_conversion_keeps_its_own_path(pool):
    def loop(cp):
        x = cp.arange(64, dtype=cp.float64)
        out = []
        for _ in range(STEPS):
            x = x + 0.25
            out.append(x.sum().item())   # (a method: not a conversion)
            _pause()
        return out, x.get()

    got, want, figures = beside_no_replay(pool, loop)
    assert [_bits(v) for v in got[0]] == [_bits(v) for v in want[0]]
    assert_bitwise(got[1], want[1])
    assert figures["lane"] >= STEPS // 4 and figures["lane_slot_reads"] == 0, figures


def test_which_reads_a_read_graph_serves():
    tools = HostGraphTools()
    a32, c128 = np.array(1.5, np.float32), np.array(2 + 3j)
    plain = [(7, KIND_OPERATOR, "float", None, [a32], {}), (9, KIND_OPERATOR, "complex", None, [c128], {})]
    slots = read_slots(tools, plain, np.ndarray)
    assert [(i, c) for i, c, _v in slots.reads] == [(7, float), (9, complex)]
    tools.launch(slots.graph)
    assert [c(v) for _i, c, v in slots.reads] == [1.5, 2 + 3j]
    a32[()] = 4.25   # (the slots follow the buffer at each launch, not before)
    assert float(slots.reads[0][2]) == 1.5
    tools.launch(slots.graph)
    assert float(slots.reads[0][2]) == 4.25
    refused = {
        "a method": [(1, KIND_METHOD, "item", a32, [], {})],
        "another operator": [(1, KIND_OPERATOR, "len", None, [np.zeros(3)], {})],
        "an array of one dimension": [(1, KIND_OPERATOR, "float", None, [np.zeros(1)], {})],
        "a value wider than 16 bytes": [(1, KIND_OPERATOR, "complex", None,
                                         [np.array(1j, np.clongdouble)], {})],
        "an object": [(1, KIND_OPERATOR, "bool", None, [np.array(None, object)], {})],
        "a keyword": [(1, KIND_OPERATOR, "int", None, [np.array(3)], {"base": 10})],
        "not the device's array": [(1, KIND_OPERATOR, "float", None, [1.5], {})],
        "one of two not a conversion": [plain[0], (2, KIND_METHOD, "item", a32, [], {})],
        "none": [],
    }
    for why, reads in refused.items():
        assert read_slots(tools, reads, np.ndarray) is None, why


def test_a_gpus_slot_memory_is_reused_only_after_a_wait():
    """On a GPU (skipped on the NumPy device): the read graph's page-locked slots never go
    back to CuPy's pinned pool, and a block let go is reused only after a wait for the
    stream (its graph's copy may still have been on its way when it was let go)."""
    from gpu_backend.devices import open_device, parse_devices
    from ..differential import TEST_DEVICES

    spec = parse_devices(TEST_DEVICES)[0]
    if not spec.startswith("cuda"):
        pytest.skip("the NumPy device's slots are its own arrays")
    device = open_device(spec)
    cp = device.cupy
    tools = device.graph_tools
    a = cp.full((), 2.5, cp.float64)
    graph, views, keep = tools.read_slots([a])
    tools.launch(graph)
    tools.wait()
    assert float(views[0]) == 2.5
    memory = keep.host.ctypes.data
    del graph, views, keep            # (let go: not yet reusable)
    _g, _v, again = tools.read_slots([a])
    assert again.host.ctypes.data != memory
    tools.wait()                      # (a wait: the block let go may be taken again)
    _g2, _v2, later = tools.read_slots([a])
    assert later.host.ctypes.data == memory
