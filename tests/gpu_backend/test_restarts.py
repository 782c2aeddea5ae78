"""Issue 52: a pool stopped with SIGTERM (or ``gpuwb-backend restart``) parks every session in
its swap directory; the pool that starts next on it gives each returning client its session
back, its arrays bitwise (door/restarts.py). Real pools (``gpuwb-backend serve`` processes),
real workers, real clients over the same-host link and tcp; the NumPy device."""

from __future__ import annotations

import os
import secrets
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.cli_moves import admin_address_for
from gpu_backend.served import ServedPool
from kernelproxy.modules import module_for
from tests.differential import TEST_DEVICES
from tests.ports import port_the_kernel_hands_no_one

PATIENCE = 90.0


@pytest.fixture
def served(tmp_path):
    """Start pools one after another on one address, token and swap directory."""
    token = secrets.token_urlsafe(24)
    pools: list[ServedPool] = []
    ports: list[int] = []   # (the first pool's, kept by the next)

    def start() -> ServedPool:
        for attempt in range(3):   # (a free port may be taken before the first pool binds it)
            port = ports[0] if ports else port_the_kernel_hands_no_one()   # (restarts.py)
            extra = ["--listen", f"tcp://127.0.0.1:{port}", "--swap-dir", str(tmp_path / "swap"),
                     "--lease-timeout", "60"]
            try:
                pool = ServedPool("fair", TEST_DEVICES, *extra, token=token)
            except RuntimeError:
                if ports or attempt == 2:
                    raise
                continue
            ports[:] = [port]
            pools.append(pool)
            return pool

    yield start, token, tmp_path / "swap", ports
    for pool in pools:
        pool.stop()


def _files(directory) -> list:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


def test_sessions_come_back_after_a_sigterm_restart_with_their_arrays(served):
    start, token, swap_dir, _ports = served
    first = start()
    local = kernelproxy.connect(first.local_address, token)    # the same-host link
    remote = kernelproxy.connect(first.tcp_address, token)     # tcp
    try:
        rng = np.random.default_rng(52)
        host = rng.standard_normal((120, 80)).astype(np.float32)
        cl = module_for(local)   # (module_for makes its session the active one: each
        x = cl.asarray(host)     # session's arrays are made right after it)
        view = x[::2, 1:]
        acc = cl.zeros(16)
        for _ in range(12):               # (a stretch the worker holds and replays)
            acc = acc + 1.0
            float(acc[0])
        cr = module_for(remote)
        y = cr.arange(1000, dtype=cr.int32) * 5
        first.stop()                      # SIGTERM: the pool parks its sessions, then ends
        records = swap_dir / "restart" / "sessions.msgpack"
        assert records.exists()
        assert stat.S_IMODE(records.stat().st_mode) == 0o600
        assert stat.S_IMODE((swap_dir / "restart").stat().st_mode) == 0o700
        second = start()                  # the next pool, same address and swap directory
        assert np.array_equal(x.get(), host)      # the first op finds its session back
        assert np.array_equal(view.get(), host[::2, 1:])
        assert np.array_equal(y.get(), np.arange(1000, dtype=np.int32) * 5)
        for _ in range(5):
            acc = acc + 1.0
            float(acc[0])
        assert float(acc[3]) == 17.0
        assert (local.moves, remote.moves) == (1, 1)
        view[0, 0] = -1.0                 # still a view of x
        assert float(x[0, 1]) == -1.0
        status = local.status()
        assert {r["session"] for r in status["sessions"]} >= {local.id, remote.id}
    finally:
        local.close()
        remote.close()
    _deadline = time.monotonic() + PATIENCE
    while _files(swap_dir) and time.monotonic() < _deadline:   # (the workers end, their files go)
        time.sleep(0.1)
    assert _files(swap_dir) == []


def test_a_session_that_cannot_be_parked_ends_as_before(served):
    start, token, swap_dir, _ports = served
    first = start()
    s = kernelproxy.connect(first.local_address, token)
    try:
        cp = module_for(s)
        rs = cp.random.RandomState(3)     # a remote object: not parked
        total = float(rs.standard_normal(10).sum())
        assert np.isfinite(total)
        first.stop()
        start()
        with pytest.raises(kernelproxy.SessionLostError):
            float(cp.arange(3).sum())
    finally:
        s.close()


def test_gpuwb_backend_restart_parks_and_starts_the_same_pool_again(served):
    start, token, swap_dir, ports = served
    pool = start()
    port = ports[0]
    s = kernelproxy.connect(pool.local_address, token)
    try:
        x = module_for(s).arange(100.0)
        taken: list[float] = []
        probing = threading.Event()
        probe = threading.Thread(target=_take_the_port_while, args=(port, probing, taken))
        probing.set()
        probe.start()
        try:
            out = subprocess.run([sys.executable, "-m", "gpu_backend.cli", "restart", "--pool",
                                  f"tcp://127.0.0.1:{port}"], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0, out.stderr
            assert "parks its 1 sessions" in out.stdout
            # the command returns once the pool has taken the restart; an op sent before its
            # worker parks is still that worker's (a loaded machine parks later): the ops go
            # on, their values right, until one finds the session parked and follows it
            deadline = time.monotonic() + 60
            while True:
                assert float(x.sum()) == 4950.0   # the same process serves again (execv), parked
                if s.moves or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        finally:
            probing.clear()
            probe.join()
        assert taken == []   # the port was never free: the pool kept its socket (door/listener.py)
        assert s.moves == 1
        assert pool.proc.poll() is None
    finally:
        s.close()


def _take_the_port_while(port: int, probing: threading.Event, taken: list[float]) -> None:
    """Try to bind *port* every few milliseconds while *probing* is set, as another program
    on a busy host might; each success is noted (and let go at once, for the pool)."""
    while probing.is_set():
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                pass
            else:
                taken.append(time.monotonic())
        time.sleep(0.005)


def test_the_restart_command_without_a_pool_says_so(tmp_path):
    out = subprocess.run([sys.executable, "-m", "gpu_backend.cli", "restart", "--pool",
                          f"tcp://127.0.0.1:{port_the_kernel_hands_no_one()}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "no pool's administration socket" in out.stderr
    assert admin_address_for("tcp://127.0.0.1:5555").endswith("gpuwb-pool-127_0_0_1-5555/admin")



@pytest.mark.timeout(100)
def test_a_client_whose_pool_was_killed_is_told_so_not_kept_waiting(tmp_path):
    """SIGKILL gives the pool no time to park: the next op fails with the session lost,
    once the heartbeat gives the pool up (a quarter of the lease's time, three times), not
    after the longest a restart may take."""
    pool = ServedPool("fair", TEST_DEVICES, "--lease-timeout", "4")
    s = kernelproxy.connect(pool.local_address, pool.token)
    try:
        x = module_for(s).arange(10.0)
        assert float(x.sum()) == 45.0
        pool.kill()
        with pytest.raises(kernelproxy.SessionLostError):
            while True:   # (its orphaned worker serves on until its watchdog ends it: ~1 s)
                float(x.sum())
                time.sleep(0.05)
    finally:
        s.close()
        pool.stop()


def test_a_pool_removes_the_swap_files_a_killed_pools_workers_left(tmp_path):
    """SIGKILL gives a pool's workers no time to delete their swap files: the next pool on
    that swap directory deletes those of workers that have gone (a session's arrays must not
    outlive it), and nothing else."""
    from gpu_backend.pool import LocalPool
    swap = tmp_path / "swap"
    swap.mkdir(mode=0o700)
    (swap / "restart").mkdir(mode=0o700)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphans = [swap / f"swap-ab12-{gone.pid}", swap / f"swap-ab12-{gone.pid}-park.manifest",
               swap / f"swap-{gone.pid}", swap / f"swap-ab12-{gone.pid}-lent-0",
               swap / "restart" / f"swap-ef56-{gone.pid}-park",   # (parked after its pool
               swap / "restart" / f"swap-ef56-{gone.pid}-park.manifest"]   # gave up on it)
    kept = [swap / f"swap-cd34-{os.getpid()}", swap / "notes.txt"]   # (a live worker's; not ours)
    for path in orphans + kept:
        path.write_bytes(b"x")
    with LocalPool(devices="cpu", swap_dir=swap):
        pass
    assert [p for p in orphans if p.exists()] == []
    assert all(p.exists() for p in kept)
