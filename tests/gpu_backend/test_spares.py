"""Warm spares (gpu_backend/door/spares.py): a device whose workers keep failing to start rests,
is passed by, refuses its hellos saying why, and is tried again after the rest; a ready
ends its run of failures.

The rules run on the tests' own clock; end to end, a real front door loses the ``ready`` of
its first workers (as a lost message or a worker stuck in CUDA's initialisation would), so
that they are given up on, and the device rests and comes back. Nothing asserts a time:
each wait polls for its condition with a generous limit.
"""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import kernelproxy
from gpu_backend.door import spares as spares_module
from gpu_backend.door.frontdoor import FrontDoor
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import SessionLostError
from gpu_backend.door.spares import MAX_FAILED_STARTS, REST, REST_LONGEST, Spares
from kernelproxy.modules import module_for

from tests.waiting import until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_device_rests_after_failed_starts_in_a_row_and_is_tried_again():
    clock = Clock()
    spares = Spares(hosts=None, spare_workers=1, ready_timeout=60.0, clock=clock)
    for _ in range(MAX_FAILED_STARTS - 1):
        spares.failed_start("cpu:0")
        assert spares.resting("cpu:0") is None
    spares.failed_start("cpu:0")
    assert spares.resting("cpu:0") == pytest.approx(REST)
    assert spares.resting("cpu:1") is None   # (another device: untouched)
    clock.now += REST / 2
    assert spares.resting("cpu:0") == pytest.approx(REST / 2)
    clock.now += REST / 2
    assert spares.resting("cpu:0") is None   # over: one more start may be tried...
    spares.failed_start("cpu:0")             # ... and it failed: a longer rest at once
    assert spares.resting("cpu:0") == pytest.approx(2 * REST)
    for _ in range(20):                      # rests double up to REST_LONGEST
        clock.now += REST_LONGEST
        assert spares.resting("cpu:0") is None
        spares.failed_start("cpu:0")
    assert spares.resting("cpu:0") == pytest.approx(REST_LONGEST)


def test_a_ready_ends_the_run_of_failures_and_the_rests():
    clock = Clock()
    spares = Spares(hosts=None, spare_workers=1, ready_timeout=60.0, clock=clock)
    for _ in range(MAX_FAILED_STARTS - 1):
        spares.failed_start("cpu:0")
    spares.ready("cpu:0")
    spares.failed_start("cpu:0")   # (a failure after a ready starts a new run)
    assert spares.resting("cpu:0") is None
    for _ in range(MAX_FAILED_STARTS - 1):
        spares.failed_start("cpu:0")
    assert spares.resting("cpu:0") == pytest.approx(REST)
    clock.now += REST
    assert spares.resting("cpu:0") is None
    spares.ready("cpu:0")
    for _ in range(MAX_FAILED_STARTS):
        spares.failed_start("cpu:0")
    assert spares.resting("cpu:0") == pytest.approx(REST)   # (not doubled: a ready came between)


class LosesFirstReadies(FrontDoor):
    """A real front door that never reads the ``ready`` of its first *lose* workers (as if
    each were lost on its way, or the worker stuck before it): each is given up on as a
    worker past ``ready_timeout`` is, a failed start. Its start is dated back past that
    timeout as its ready is dropped, so that the pool's own look for late starts gives it
    up at once: the timeout itself can stay long enough for a real start on a loaded host
    (4 s was not, under a test suite's load: the spare started after the rest was given up
    on too, and the test failed)."""

    lose = MAX_FAILED_STARTS

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.ignored: list = []

    def _control_message(self, worker, msg: dict) -> None:
        if msg.get("t") == "ready" and len(self.ignored) < self.lose and not worker.given_up:
            self.ignored.append(worker)
            worker.started -= 2 * self.settings.ready_timeout
            return
        super()._control_message(worker, msg)


class LosesFirstReadiesPool(LocalPool):
    door_class = LosesFirstReadies


def test_a_device_whose_starts_fail_rests_refuses_hellos_saying_why_then_serves(monkeypatch):
    monkeypatch.setattr(spares_module, "REST", 8.0)   # (the front door runs in this process)
    with LosesFirstReadiesPool(devices="cpu", ready_timeout=60.0, lease_timeout=60,
                               spare_workers=1, metrics_port=0) as pool:
        assert until(lambda: pool.door.spares.resting(pool.door.devices[0]) is not None, 120)
        assert pool.door.spares.given_up >= MAX_FAILED_STARTS
        with pytest.raises(SessionLostError, match="fail to start .* tried again in"):
            kernelproxy.connect(pool.address, pool.token, timeout=60).close()
        # after the rest a spare starts again (its ready is read), and serves
        assert until(lambda: pool.door.spares.resting(pool.door.devices[0]) is None, 60)
        with kernelproxy.connect(pool.address, pool.token, timeout=60) as session:
            assert float(module_for(session).arange(4).sum()) == 6.0
        assert pool.door.spares.failed == {}
        port = pool.door.metrics_server.server_port   # (published once a second)
        assert until(lambda: _given_up(port) >= MAX_FAILED_STARTS, 30)


def _given_up(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return next(s.value for family in text_string_to_metric_families(text)
                for s in family.samples if s.name == "gpuwb_starts_given_up_total")
