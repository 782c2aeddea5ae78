"""Prometheus metrics of a pool (issue 10): a real pool on the NumPy device with
``metrics_port``, real sessions and ops, real HTTP scrapes parsed by prometheus_client."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import AuthenticationError
from kernelproxy.modules import module_for


def _scrape(port: int) -> dict:
    """{(name, labels...): value} of one scrape."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, *sorted(sample.labels.items()))] = sample.value
    return samples


def _until(port: int, check, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        samples = _scrape(port)
        if check(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.2)


@pytest.fixture(scope="module")
def pool():
    with LocalPool(devices="cpu", metrics_port=0) as p:
        yield p


def test_metrics_follow_sessions_ops_and_refusals(pool):
    port = pool.door.metrics_server.server_port
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(session)
        x = cp.arange(100000.0)
        for _ in range(20):
            x = x + 1
        assert x.get().sum() > 0   # 800 kB downloaded
        samples = _until(port, lambda s: s.get(("gpuwb_device_sessions", ("device", "cpu:0"))) == 1
                         and s.get(("gpuwb_user_ops_total", ("user", "default")), 0) >= 20
                         and s.get(("gpuwb_user_bytes_out_total", ("user", "default")), 0) > 0)
        assert samples[("gpuwb_pool_up",)] == 1
        assert samples[("gpuwb_device_sessions", ("device", "cpu:0"))] == 1
        assert samples[("gpuwb_user_ops_total", ("user", "default"))] >= 20
        assert samples[("gpuwb_user_device_seconds_total", ("user", "default"))] > 0
        assert samples[("gpuwb_user_bytes_out_total", ("user", "default"))] >= 800000
        assert samples[("gpuwb_user_weight", ("device", "cpu:0"), ("user", "default"))] == 1
        assert samples[("gpuwb_requests_total", ("type", "hello"))] >= 1
        assert samples[("gpuwb_device_seconds_total", ("device", "cpu:0"))] > 0
        # an op that raises: counted for its user, and the session goes on
        with pytest.raises(ValueError):
            float((cp.ones(3) + cp.ones(4)).sum())
        samples = _until(port, lambda s: s.get(("gpuwb_user_op_errors_total", ("user", "default")),
                                                0) >= 1)
        assert samples[("gpuwb_user_op_errors_total", ("user", "default"))] == 1
        assert float(x.sum()) > 0
    finally:
        session.close()
    with pytest.raises(AuthenticationError):
        kernelproxy.connect(pool.address, "not-the-token")
    samples = _until(port, lambda s: s.get(("gpuwb_errors_total", ("error", "AuthenticationError")),
                                            0) >= 1
                     and s.get(("gpuwb_device_sessions", ("device", "cpu:0"))) == 0)
    assert samples[("gpuwb_errors_total", ("error", "AuthenticationError"))] >= 1
    assert samples[("gpuwb_device_sessions", ("device", "cpu:0"))] == 0
    # counters never go backwards when the session ends
    assert samples[("gpuwb_user_ops_total", ("user", "default"))] >= 20


def test_each_devices_busy_time_and_memory_over_time(pool):
    """The device's last sample: busy by the pool's accounting; on the NumPy device no
    NVML figures (there is no GPU to read), and no crash for their absence."""
    port = pool.door.metrics_server.server_port
    with kernelproxy.connect(pool.address, pool.token) as session:
        cp = module_for(session)
        z = cp.ones((256, 256))

        def busy(s: dict) -> bool:
            assert float(((z @ z) / 256.0).sum()) > 0   # the device busy between scrapes
            return s.get(("gpuwb_device_busy_ratio", ("device", "cpu:0")), 0) > 0

        samples = _until(port, busy, timeout=60)
        assert 0 < samples[("gpuwb_device_busy_ratio", ("device", "cpu:0"))] <= 1
        assert not any(key[0] in ("gpuwb_device_utilization_ratio",
                                  "gpuwb_device_nvml_memory_used_bytes") for key in samples)


def test_no_metrics_server_unless_asked():
    with LocalPool(devices="cpu") as p:
        assert p.door.metrics_server is None and p.door.published is None


def test_serve_prints_the_metrics_address(tmp_path):
    token = tmp_path / "token"
    token.write_text("t0ken")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
         "--devices", "cpu", "--token-file", str(token), "--metrics-port", "0",
         "--usage-log", str(tmp_path / "usage.jsonl")],
        stdout=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "Prometheus" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
        assert "Prometheus metrics on http://127.0.0.1:" in line, line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        assert _until(port, lambda s: ("gpuwb_pool_up",) in s)[("gpuwb_pool_up",)] == 1
    finally:
        proc.terminate()
        proc.wait(30)
