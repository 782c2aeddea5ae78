"""The pool as a whole: placement, warm workers, settings, the command line, status."""

import os
import subprocess
import sys
import time

import pytest

import kernelproxy
from gpu_backend.config import PoolSettings
from gpu_backend.devices import parse_devices
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for


def test_parse_devices():
    assert parse_devices("cpu") == ["cpu:0"]
    assert parse_devices("cpu,cpu") == ["cpu:0", "cpu:1"]
    assert parse_devices("0,2") == ["cuda:0", "cuda:2"]
    auto = parse_devices("auto")
    assert auto == ["cpu:0"] or all(d.startswith("cuda:") for d in auto)
    for bad in ("", "gpu", "0,0", "cpu,x"):
        with pytest.raises(ValueError):
            parse_devices(bad)


def test_settings_from_environment_and_toml(tmp_path, monkeypatch):
    config = tmp_path / "pool.toml"
    config.write_text('devices = "cpu"\nlease_timeout = 7.5\nmemory_limit = 123456789\n')
    monkeypatch.setenv("GPUWB_CONFIG", str(config))
    monkeypatch.setenv("GPUWB_LEASE_TIMEOUT", "9")      # the environment beats the file
    s = PoolSettings()
    assert (s.devices, s.lease_timeout, s.memory_limit) == ("cpu", 9.0, 123456789)
    assert PoolSettings(lease_timeout=3).lease_timeout == 3   # arguments beat both
    with pytest.raises(ValueError):
        PoolSettings(listen="udp://nowhere")


def test_least_loaded_placement_and_status():
    with LocalPool(devices="cpu,cpu", lease_timeout=10) as pool:
        sessions = [kernelproxy.connect(pool.address, pool.token) for _ in range(4)]
        try:
            placed = [s.device["index"] for s in sessions]
            assert sorted(placed) == [0, 0, 1, 1]
            status = sessions[0].status()
            assert [d["sessions"] for d in status["devices"]] == [2, 2]
            assert {s.id for s in sessions} == {row["session"] for row in status["sessions"]}
        finally:
            for s in sessions:
                s.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = kernelproxy.connect(pool.address, pool.token)
            left = [row["session"] for row in probe.status()["sessions"]]
            probe.close()
            if left == [probe.id]:
                break
            time.sleep(0.1)
        assert left == [probe.id]                         # closed sessions are gone


def test_a_warm_spare_is_kept_per_device():
    """A hello takes a worker that is already started; a new spare replaces it."""
    with LocalPool(devices="cpu", lease_timeout=10) as pool:
        def spares():
            return pool.door.status()["devices"][0]["spares_ready"]

        deadline = time.monotonic() + 30
        while spares() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert spares() == 1
        workers_before = set(pool.door.host.workers)
        with kernelproxy.connect(pool.address, pool.token) as s:
            assert s.worker_address                       # served by the spare that was waiting
            assert any(w.session is not None for w in list(pool.door.host.workers.values())
                       if w.wid in workers_before)
            while spares() < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert spares() == 1                          # and a new one took its place


def test_session_memory_limit_request(pool):
    with kernelproxy.connect(pool.address, pool.token, memory_limit=1 << 20) as s:
        assert s.memory_limit == 1 << 20
        cp = module_for(s)
        with pytest.raises(kernelproxy.OutOfMemoryError):
            cp.zeros(1 << 20)
            s.sync()


def test_cli_serve_with_token_file(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
         "--devices", "cpu", "--token-file", str(token)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert "listening on tcp://127.0.0.1:" in line
        address = line.split()[4]
        with pytest.raises(kernelproxy.AuthenticationError):
            kernelproxy.connect(address, "wrong")
        with kernelproxy.connect(address, "s3cret-token") as s:
            assert float(module_for(s).arange(5).sum()) == 10.0
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_an_ipv6_loopback_pool_serves():
    """``--listen tcp://[::1]:P``: an IPv6 host in brackets, for the pool, its workers and
    its clients; a malformed address is refused saying what it should look like."""
    import socket
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("this host has no IPv6 loopback")
    with LocalPool(devices="cpu", listen="tcp://[::1]:0", same_host=False) as pool:
        assert pool.address.startswith("tcp://[::1]:")
        with kernelproxy.connect(pool.address, pool.token) as session:
            assert session.worker_address.startswith("tcp://[::1]:")
            assert float(module_for(session).arange(5.0).sum()) == 10.0
            assert session.status()["address"] == pool.address
    for bad in ("tcp://::1:5555", "tcp://[::1]", "tcp://host:99999", "ipc:///tmp/x"):
        with pytest.raises(ValueError, match=r"tcp://\[::\]:5555 for IPv6"):
            PoolSettings(listen=bad)
